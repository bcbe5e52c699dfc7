import type { DescriptorProto, EnumDescriptorProto, FieldDescriptorProto, FileDescriptorProto } from "@bufbuild/protobuf/wkt";

/** What one proto file declares, by fully-qualified name (no leading dot). */
export interface FileDeclarations {
  /**
   * Every name `file_containing_symbol` accepts: messages and enums (nested ones and map
   * entries too), fields and oneofs (`pkg.Msg.field`), enum values (scoped as siblings of their
   * enum, as protobuf scopes them: `pkg.VALUE`), extensions, services and methods
   * (`pkg.Svc.Method`).
   */
  readonly symbols: string[];
  /** Message types only (for `all_extension_numbers_of_type`). */
  readonly messages: string[];
  /** Extensions declared in the file, by extended message and field number. */
  readonly extensions: { extendee: string; fieldNumber: number }[];
}

/**
 * Walks the `FileDescriptorProto` itself rather than the `Desc*` wrappers: it is what clients
 * receive, and it lists map-entry messages, which the wrappers hide.
 */
export function fileDeclarations(file: FileDescriptorProto): FileDeclarations {
  const out: FileDeclarations = { symbols: [], messages: [], extensions: [] };
  const scope = file.package === "" ? "" : `${file.package}.`;
  for (const message of file.messageType) addMessage(out, scope, message);
  for (const enumType of file.enumType) addEnum(out, scope, enumType);
  for (const extension of file.extension) addExtension(out, scope, extension);
  for (const service of file.service) {
    const name = `${scope}${service.name}`;
    out.symbols.push(name, ...service.method.map((method) => `${name}.${method.name}`));
  }
  return out;
}

function addMessage(out: FileDeclarations, scope: string, message: DescriptorProto): void {
  const name = `${scope}${message.name}`;
  out.symbols.push(name);
  out.messages.push(name);
  for (const member of [...message.field, ...message.oneofDecl]) out.symbols.push(`${name}.${member.name}`);
  for (const nested of message.nestedType) addMessage(out, `${name}.`, nested);
  for (const nested of message.enumType) addEnum(out, `${name}.`, nested);
  for (const extension of message.extension) addExtension(out, `${name}.`, extension);
}

function addEnum(out: FileDeclarations, scope: string, enumType: EnumDescriptorProto): void {
  out.symbols.push(`${scope}${enumType.name}`);
  // Enum values live in the enum's enclosing scope, not inside the enum.
  for (const value of enumType.value) out.symbols.push(`${scope}${value.name}`);
}

function addExtension(out: FileDeclarations, scope: string, extension: FieldDescriptorProto): void {
  out.symbols.push(`${scope}${extension.name}`);
  // Compiled descriptors hold fully-qualified type references with a leading dot.
  const extendee = extension.extendee.replace(/^\./, "");
  out.extensions.push({ extendee, fieldNumber: extension.number });
}

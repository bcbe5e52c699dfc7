import type { ComponentChildren } from "preact";
import { RestError } from "../api/rest.ts";

/** A REST validation error, split into the field it names (without `body.`) and its message. */
export interface FormError {
  field: string;
  message: string;
}

export function formErrorOf(err: unknown): FormError {
  if (err instanceof RestError) return { field: (err.field ?? "").replace(/^body\.?/, ""), message: err.message };
  return { field: "", message: err instanceof Error ? err.message : String(err) };
}

/** The message for `field`, shown next to its input; `describedBy` ties it to the input for screen readers. */
export function FieldError({ error, field, id }: { error: FormError | undefined; field: string; id: string }): ComponentChildren {
  if (!error || error.field !== field) return null;
  return (
    <span class="field-error" id={id} role="alert" data-field={field}>
      {error.message}
    </span>
  );
}

/** Whether the error belongs to none of the form's known fields (then it is shown for the form). */
export const unplaced = (error: FormError | undefined, fields: readonly string[]): boolean => !!error && !fields.includes(error.field);

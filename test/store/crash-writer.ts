/**
 * Child process of the crash test: appends turns (and a batch of 3 events after each) to a
 * new session as fast as it can, printing `turn N` after each committed turn, until killed.
 * Usage: node crash-writer.ts '<StoreSettings JSON>' <tenant name>
 */
import { openStore } from "../../src/store/index.ts";
import { turnFor } from "./fixtures.ts";

const [settingsJson, tenantName] = process.argv.slice(2);
if (settingsJson === undefined || tenantName === undefined) throw new Error("usage: crash-writer.ts <settings> <tenant>");
const store = await openStore(JSON.parse(settingsJson));
const tenant = await store.ensureTenant(tenantName);
const session = await store.createSession(tenant.id, { environmentId: "env", model: "scripted/default" });
process.stdout.write(`session ${session.id}\n`);
for (let n = 1; ; n++) {
  await store.appendTurn(tenant.id, session.id, turnFor(n));
  await store.appendEvents(
    tenant.id,
    session.id,
    [0, 1, 2].map((i) => ({ seq: 3 * (n - 1) + i + 1, payload: new TextEncoder().encode(`turn ${n} event ${i}`) })),
  );
  process.stdout.write(`turn ${n}\n`);
}

/**
 * The one behavioural suite every `Store` implementation must pass. An implementation's test
 * file calls `defineStoreConformance(name, harness)` with a harness that makes empty databases.
 */
import { afterAll, beforeAll, describe } from "vitest";
import { openStore, type Store, type StoreSettings, type Tenant } from "../../src/store/index.ts";
import { uniqueName } from "./fixtures.ts";
import { conversationSuite } from "./suites/conversation.ts";
import { crashSuite } from "./suites/crash.ts";
import { durableSessionSuite } from "./suites/durable-sessions.ts";
import { findingSessionSuite } from "./suites/finding-sessions.ts";
import { environmentSuite } from "./suites/environments.ts";
import { eventSuite } from "./suites/events.ts";
import { keySuite } from "./suites/keys.ts";
import { migrationSuite } from "./suites/migrations.ts";
import { orphanedSessionSuite } from "./suites/orphaned-sessions.ts";
import { sessionMessageSuite } from "./suites/session-messages.ts";
import { sessionSuite } from "./suites/sessions.ts";
import { spendSuite } from "./suites/spend.ts";
import { taskSuite } from "./suites/tasks.ts";
import { tenantSuite } from "./suites/tenants.ts";
import { transcriptSuite } from "./suites/transcript.ts";

export interface StoreHarness {
  /** Settings (for `openStore`) of a new, empty database of this engine. */
  newDatabase(): Promise<StoreSettings>;
  /** The engine's own consistency check of the database behind `settings`; throws when it fails. */
  integrityCheck(settings: StoreSettings): Promise<void>;
  /**
   * Whether two stores may be open on one database in one process at the same moment
   * (Postgres: yes; SQLite: one connection per file per process).
   */
  concurrentStores: boolean;
}

/** What each part of the suite gets: the shared store (retention: 5 events, 60 s after end). */
/** The order of every list: newest first, ties (the same millisecond) broken by id, descending. */
export const newestFirst = (a: { createdAt: number; id: string }, b: { createdAt: number; id: string }): number =>
  b.createdAt - a.createdAt || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0);

export interface SuiteContext {
  harness: StoreHarness;
  store(): Store;
  settings(): StoreSettings;
  /** A fresh tenant, so tests never see each other's rows. */
  tenant(label?: string): Promise<Tenant>;
}

export const SUITE_RETENTION = { maxEventsPerSession: 5, keepAfterEndMs: 60_000 };

export function defineStoreConformance(name: string, harness: StoreHarness): void {
  describe(`Store conformance: ${name}`, () => {
    let store: Store | undefined;
    let settings: StoreSettings | undefined;
    beforeAll(async () => {
      settings = { ...(await harness.newDatabase()), eventRetention: SUITE_RETENTION };
      store = await openStore(settings);
    });
    afterAll(async () => {
      await store?.close();
    });
    const ctx: SuiteContext = {
      harness,
      store: () => store!,
      settings: () => settings!,
      tenant: (label = "tenant") => store!.ensureTenant(uniqueName(label)),
    };
    migrationSuite(ctx);
    tenantSuite(ctx);
    keySuite(ctx);
    environmentSuite(ctx);
    sessionSuite(ctx);
    transcriptSuite(ctx);
    conversationSuite(ctx);
    eventSuite(ctx);
    taskSuite(ctx);
    durableSessionSuite(ctx);
    sessionMessageSuite(ctx);
    orphanedSessionSuite(ctx);
    findingSessionSuite(ctx);
    spendSuite(ctx);
    crashSuite(ctx);
  });
}

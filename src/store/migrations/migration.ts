import type { Dialect } from "../sql/database.ts";

/**
 * One schema step. Versions are applied in ascending order, each in its own transaction
 * together with its `schema_migrations` row; a version once released is never edited (add a
 * new one instead). Statements are written once; `dialect` supplies the few type names that
 * differ between engines.
 */
export interface Migration {
  version: number;
  /** Short snake_case description, shown in errors and stored in `schema_migrations`. */
  name: string;
  statements(dialect: Dialect): string[];
}

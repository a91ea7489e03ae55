/**
 * The node:sqlite loader: the one warning Node 22 prints on loading it is
 * recognised by type and message, and no other warning is.
 */
import { describe, expect, it } from 'vitest';
import { isSqliteExperimentalWarning, loadSqlite } from '../../../../src/memory/search/database.js';

const MESSAGE = 'SQLite is an experimental feature and might change at any time';

describe('the node:sqlite loader', () => {
  it("recognises Node 22's ExperimentalWarning for node:sqlite, in each form emitWarning takes", () => {
    expect(isSqliteExperimentalWarning(MESSAGE, 'ExperimentalWarning')).toBe(true);
    expect(isSqliteExperimentalWarning(MESSAGE, { type: 'ExperimentalWarning' })).toBe(true);
    const error = Object.assign(new Error(MESSAGE), { name: 'ExperimentalWarning' });
    expect(isSqliteExperimentalWarning(error, undefined)).toBe(true);
  });

  it('lets every other warning through', () => {
    expect(isSqliteExperimentalWarning('Fetch is an experimental feature', 'ExperimentalWarning')).toBe(
      false,
    );
    expect(isSqliteExperimentalWarning(MESSAGE, 'DeprecationWarning')).toBe(false);
    expect(isSqliteExperimentalWarning(MESSAGE, undefined)).toBe(false);
    expect(isSqliteExperimentalWarning(new Error(MESSAGE), undefined)).toBe(false);
  });

  it('loads SQLite with FTS5, and leaves process.emitWarning as it was', () => {
    const before = process.emitWarning;
    const { DatabaseSync } = loadSqlite();
    expect(process.emitWarning).toBe(before);
    const db = new DatabaseSync(':memory:');
    try {
      db.exec("CREATE VIRTUAL TABLE t USING fts5 (body, tokenize = 'porter unicode61 remove_diacritics 2')");
      db.prepare('INSERT INTO t (body) VALUES (?)').run('São João moved');
      const row = db
        .prepare("SELECT snippet(t, 0, '[', ']', '…', 8) AS s FROM t WHERE t MATCH ?")
        .get('sao move');
      expect(row?.s).toBe('[São] João [moved]');
    } finally {
      db.close();
    }
  });
});

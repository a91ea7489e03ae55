/**
 * Where the Rust crypto machine's keys live between runs. The WebAssembly
 * crypto keeps its store in IndexedDB, which Node lacks: it gets
 * fake-indexeddb (in memory), and this file copies that store's databases to
 * one file in magpie's state folder and back — every object store's schema
 * and records, written with Node's structured serialiser (`v8.serialize`,
 * the same clone rules IndexedDB uses) to a temporary file renamed over the
 * old one, so a crash leaves the previous whole snapshot, never half of one.
 *
 * Each run opens the store under a fresh database name (`<prefix>-<random>`)
 * and loads the file into it, so nothing outlives a run but the file.
 */
import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { deserialize, serialize } from 'node:v8';

/* The few IndexedDB shapes used here (magpie compiles without the DOM library). */
interface Req<T> {
  readonly result: T;
  readonly error: unknown;
  onsuccess: (() => void) | null;
  onerror: (() => void) | null;
}
interface OpenReq extends Req<Db> {
  onupgradeneeded: (() => void) | null;
}
interface Db {
  readonly version: number;
  readonly objectStoreNames: Iterable<string>;
  transaction(names: string[], mode: 'readonly' | 'readwrite'): Tx;
  createObjectStore(name: string, options: { keyPath?: string | string[]; autoIncrement: boolean }): Store;
  close(): void;
}
interface Tx {
  readonly error: unknown;
  objectStore(name: string): Store;
  oncomplete: (() => void) | null;
  onerror: (() => void) | null;
  onabort: (() => void) | null;
}
interface Store {
  readonly keyPath: string | string[] | null;
  readonly autoIncrement: boolean;
  readonly indexNames: Iterable<string>;
  index(name: string): { keyPath: string | string[]; unique: boolean; multiEntry: boolean };
  getAllKeys(): Req<unknown[]>;
  getAll(): Req<unknown[]>;
  put(value: unknown, key?: unknown): unknown;
  createIndex(
    name: string,
    keyPath: string | string[],
    options: { unique: boolean; multiEntry: boolean },
  ): unknown;
}
interface Factory {
  open(name: string, version?: number): OpenReq;
  databases(): Promise<{ name?: string }[]>;
}
/** The global IndexedDB (fake-indexeddb's, once `provideIndexedDB` ran). */
const idb = (): Factory => (globalThis as unknown as { indexedDB: Factory }).indexedDB;

interface IndexSchema {
  name: string;
  keyPath: string | string[];
  unique: boolean;
  multiEntry: boolean;
}

interface StoreSnapshot {
  name: string;
  keyPath: string | string[] | null;
  autoIncrement: boolean;
  indexes: IndexSchema[];
  keys: unknown[];
  values: unknown[];
}

interface DatabaseSnapshot {
  /** The database's name after the store prefix (`::matrix-sdk-crypto`, …). */
  suffix: string;
  version: number;
  stores: StoreSnapshot[];
}

/** The file format's version, so a later change can tell old files apart. */
const FORMAT = 1;

/** One device's crypto store: loaded from `file` on open, written back by `save`. */
export class CryptoStoreFile {
  /** The database name prefix the crypto machine opens its store under for this run. */
  readonly prefix = `magpie-matrix-${randomUUID()}`;
  readonly file: string;

  constructor(file: string) {
    this.file = file;
  }

  /**
   * Makes IndexedDB reachable to the WebAssembly crypto, which looks for the
   * global `indexedDB` and checks objects against the global `IDB*` classes:
   * fake-indexeddb's `auto` entry defines them all (when Node has none).
   */
  static async provideIndexedDB(): Promise<void> {
    if ((globalThis as { indexedDB?: unknown }).indexedDB === undefined) await import('fake-indexeddb/auto');
  }

  /** Loads the kept snapshot into this run's databases; false when there is none (a new device). */
  async load(): Promise<boolean> {
    let bytes: Buffer;
    try {
      bytes = await readFile(this.file);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') return false;
      throw err;
    }
    const kept = deserialize(bytes) as { format: number; databases: DatabaseSnapshot[] };
    if (kept?.format !== FORMAT || !Array.isArray(kept.databases))
      throw new TypeError(`${this.file} is not a magpie crypto store (format ${String(kept?.format)})`);
    for (const db of kept.databases) await restore(`${this.prefix}${db.suffix}`, db);
    return true;
  }

  /** Writes every database of this run's store to the file (atomically). */
  async save(): Promise<void> {
    const names = (await idb().databases())
      .map((d) => d.name)
      .filter((n): n is string => typeof n === 'string' && n.startsWith(this.prefix));
    const databases: DatabaseSnapshot[] = [];
    for (const name of names.sort()) databases.push(await snapshot(name, name.slice(this.prefix.length)));
    await mkdir(path.dirname(this.file), { recursive: true, mode: 0o700 });
    // Unique per save: two gateways of one process (or two saves at once) must not share it.
    const temporary = `${this.file}.${process.pid}.${randomUUID()}.tmp`;
    await writeFile(temporary, serialize({ format: FORMAT, databases }), { mode: 0o600 });
    await rename(temporary, this.file);
  }
}

function request<T>(req: Req<T>): Promise<T> {
  return new Promise((resolve, reject) => {
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

function done(tx: Tx): Promise<void> {
  return new Promise((resolve, reject) => {
    tx.oncomplete = () => resolve();
    tx.onerror = () => reject(tx.error);
    tx.onabort = () => reject(tx.error);
  });
}

async function snapshot(name: string, suffix: string): Promise<DatabaseSnapshot> {
  const db = await request(idb().open(name));
  try {
    const storeNames = [...db.objectStoreNames];
    const stores: StoreSnapshot[] = [];
    if (storeNames.length > 0) {
      const tx = db.transaction(storeNames, 'readonly');
      for (const storeName of storeNames) {
        const store = tx.objectStore(storeName);
        stores.push({
          name: storeName,
          keyPath: store.keyPath,
          autoIncrement: store.autoIncrement,
          indexes: [...store.indexNames].map((indexName) => {
            const index = store.index(indexName);
            return {
              name: indexName,
              keyPath: index.keyPath,
              unique: index.unique,
              multiEntry: index.multiEntry,
            };
          }),
          keys: await request(store.getAllKeys()),
          values: await request(store.getAll()),
        });
      }
      await done(tx);
    }
    return { suffix, version: db.version, stores };
  } finally {
    db.close();
  }
}

async function restore(name: string, kept: DatabaseSnapshot): Promise<void> {
  const open = idb().open(name, kept.version);
  open.onupgradeneeded = () => {
    const db = open.result;
    for (const s of kept.stores) {
      const store = db.createObjectStore(s.name, {
        ...(s.keyPath !== null ? { keyPath: s.keyPath } : {}),
        autoIncrement: s.autoIncrement,
      });
      for (const i of s.indexes)
        store.createIndex(i.name, i.keyPath, { unique: i.unique, multiEntry: i.multiEntry });
    }
  };
  const db = await request(open);
  try {
    if (kept.stores.length === 0) return;
    const tx = db.transaction(
      kept.stores.map((s) => s.name),
      'readwrite',
    );
    for (const s of kept.stores) {
      const store = tx.objectStore(s.name);
      s.values.forEach((value, i) => {
        if (s.keyPath === null) store.put(value, s.keys[i]);
        else store.put(value);
      });
    }
    await done(tx);
  } finally {
    db.close();
  }
}

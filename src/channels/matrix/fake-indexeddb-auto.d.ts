/** fake-indexeddb's `auto` entry defines the global IndexedDB classes; its package exports no types for it. */
declare module 'fake-indexeddb/auto';

#!/usr/bin/env node
/**
 * Bundles the CLI with esbuild after `tsc` has emitted dist/: dist/cli/bin.js, from the entry
 * src/main.ts (the top of the import graph), becomes one
 * ES module holding the command table, and each command (with the pure-JS packages it uses:
 * zod, openai, pino, yaml…) is in chunks in dist/chunks/, loaded only when that command
 * runs. A few files instead of hundreds of modules is what makes `magpie agent -m` start
 * quickly. Packages that find files next to their own code at run time (bullmq's
 * Lua scripts, bull-board's UI) or load optional native addons stay external; pino is
 * inlined and its transport workers still start from node_modules.
 *
 * Files are only rewritten when their content changed (atomically, by rename), so tests
 * that rebuild while another test runs `node dist/cli/bin.js` never see a half-written chunk.
 *
 *   node scripts/bundle.mjs        (part of `npm run build`)
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const pkg = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));

/** Pure-JS packages that are safe to inline; every other dependency is imported from node_modules. */
const INLINE = new Set([
  'zod',
  'openai',
  'yaml',
  'pino',
  'ipaddr.js',
  'marked',
  'htmlparser2',
  '@modelcontextprotocol/sdk',
]);
// cron-parser stays external: bullmq loads its own copy with node_modules/luxon in every bus
// process, so an inlined cron-parser was a second luxon (250 kB of source) in each worker.

const external = Object.keys(pkg.dependencies ?? {})
  .filter((name) => !INLINE.has(name))
  .flatMap((name) => [name, `${name}/*`]);

/**
 * zod's classic API re-exports every error-message locale as `z.locales` (about 360 kB that
 * each start would parse); magpie only uses the English one zod installs by default, so the
 * bundle's `z.locales` holds `en` only.
 */
const zodEnglishOnly = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /^\.\.\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${path.sep}zod${path.sep}`)
        ? { path: args.importer, namespace: 'zod-locales' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: "export { default as en } from '../locales/en.js';",
      resolveDir: path.dirname(args.path),
      loader: 'js',
    }));
  },
};

/**
 * pino (inlined: its ~20 CommonJS files cost more to resolve and load one by one) starts
 * its transport workers (pino-pretty) from files next to its own code, found through
 * `__dirname`. In the bundle that folder is pino's and thread-stream's real one in
 * node_modules, looked up only when a transport starts.
 */
const pinoWorkersFromNodeModules = {
  name: 'pino-workers-from-node-modules',
  setup(b) {
    const folders = {
      'pino/lib/transport.js':
        "require('node:path').join(require('node:path').dirname(require.resolve('pino')), 'lib')",
      'thread-stream/index.js':
        "require('node:path').dirname(require('node:module').createRequire(require.resolve('pino')).resolve('thread-stream'))",
    };
    b.onLoad(
      { filter: /[\\/]node_modules[\\/](pino[\\/]lib[\\/]transport|thread-stream[\\/]index)\.js$/ },
      async (args) => {
        const key = Object.keys(folders).find((k) =>
          args.path.split(path.sep).join('/').endsWith(`node_modules/${k}`),
        );
        if (!key) return undefined;
        const source = await readFile(args.path, 'utf8');
        return {
          contents: `${source.replaceAll('__dirname', '__magpiePackageDir()')}\nfunction __magpiePackageDir() { return ${folders[key]}; }\n`,
          loader: 'js',
        };
      },
    );
  },
};

// Chunks sit two levels below the package root, like dist/workspace/templates.js did, so
// `new URL('../../workspace/', import.meta.url)` still finds the workspace templates.
const result = await build({
  absWorkingDir: root,
  entryPoints: { 'cli/bin': 'src/main.ts' },
  outdir: 'dist',
  chunkNames: 'chunks/[name]-[hash]',
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  external,
  plugins: [zodEnglishOnly, pinoWorkersFromNodeModules],
  // CommonJS code inlined into an ES module (yaml's and cron-parser's requires of Node
  // built-ins) needs a `require`.
  banner: {
    js: "import { createRequire as __magpieRequire } from 'node:module';\nconst require = __magpieRequire(import.meta.url);",
  },
  legalComments: 'none',
  logLevel: 'warning',
  write: false,
});

/**
 * esbuild escapes non-ASCII characters in strings but keeps them in comments and regular
 * expressions; one `—` in a comment makes V8 hold the whole chunk's source as a two-byte string
 * (a 950 kB chunk costs 1.9 MB of every process's heap). Escaped here as `\uXXXX`, which means
 * the same in a regular expression and is only text in a comment.
 */
function asciiOnly(contents) {
  const text = Buffer.from(contents).toString('utf8');
  if (!/[^\x00-\x7f]/.test(text)) return contents;
  const escaped = text.replace(/[^\x00-\x7f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  return Buffer.from(escaped, 'utf8');
}

const written = new Set();
for (const output of result.outputFiles) {
  const file = output.path.endsWith('.js')
    ? { path: output.path, contents: asciiOnly(output.contents) }
    : output;
  written.add(file.path);
  let current;
  try {
    current = readFileSync(file.path);
  } catch {
    current = undefined; // a new file
  }
  if (current?.equals(file.contents)) continue;
  mkdirSync(path.dirname(file.path), { recursive: true });
  const temp = `${file.path}.${process.pid}.tmp`;
  writeFileSync(temp, file.contents, { mode: file.path.endsWith(`${path.sep}bin.js`) ? 0o755 : 0o644 });
  renameSync(temp, file.path);
}
// Chunks of earlier builds (their names carry a content hash) are no longer referenced.
const chunks = path.join(root, 'dist', 'chunks');
for (const name of readdirSync(chunks)) {
  if (!written.has(path.join(chunks, name))) rmSync(path.join(chunks, name), { force: true });
}

/**
 * dependency-cruiser: the boundaries of src/ (`npm run lint:deps`).
 * Type-only imports count (tsPreCompilationDeps): a type is a dependency too.
 * Cycles between top-level folders of src/ are checked by
 * scripts/folder-cycles.mjs (dependency-cruiser's rules are per file).
 */

/** A rule: only files under `owner` (a path regex) import the npm package(s) `pkg` (a regex). */
function onlyImporter(name, owner, pkg, comment) {
  return {
    name,
    comment,
    severity: 'error',
    from: { path: '^src/', pathNot: owner },
    to: { path: `(^|/)node_modules/(${pkg})/` },
  };
}

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import cycle between files.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    onlyImporter(
      'only-bus-imports-redis',
      '^src/bus/',
      'bullmq|ioredis',
      'Only src/bus talks to Redis and BullMQ; everything else sees its stores through ports.',
    ),
    onlyImporter('only-telegram-imports-telegraf', '^src/channels/telegram/', 'telegraf', 'The Telegram adapter is the only telegraf user.'),
    onlyImporter('only-discord-imports-discord-js', '^src/channels/discord/', 'discord\\.js', 'The Discord adapter is the only discord.js user.'),
    onlyImporter('only-slack-imports-slack-sdk', '^src/channels/slack/', '@slack/', 'The Slack adapter is the only user of @slack/bolt (and the Slack SDK under it).'),
    onlyImporter('only-matrix-imports-matrix-sdk', '^src/channels/matrix/', 'matrix-js-sdk|@matrix-org/|fake-indexeddb', 'The Matrix adapter is the only user of matrix-js-sdk, its Rust crypto and the IndexedDB that crypto keeps its keys in.'),
    onlyImporter('only-email-imports-mail-libraries', '^src/channels/email/', 'imapflow|nodemailer|mailparser', 'The e-mail adapter is the only user of imapflow, nodemailer and mailparser.'),
    onlyImporter('only-signal-imports-eventsource', '^src/channels/signal/', 'eventsource', 'The Signal adapter is the only user of eventsource (signal-cli\'s event stream).'),
    onlyImporter('only-openai-provider-imports-openai', '^src/providers/openai/', 'openai', 'providers/openai maps the SDK and its errors to the LLMProvider port.'),
    onlyImporter('only-telemetry-imports-opentelemetry', '^src/telemetry/otel\\.ts$', '@opentelemetry/', 'Only src/telemetry/otel.ts (loaded by a dynamic import when OTEL_* turns tracing on) uses the OpenTelemetry SDK; the rest calls the facade in src/telemetry/tracing.ts.'),
    onlyImporter('only-mcp-imports-mcp-sdk', '^src/mcp/', '@modelcontextprotocol/sdk', 'src/mcp is the only MCP client.'),
    onlyImporter('only-backup-imports-tar-and-age', '^src/backup/', 'tar|age-encryption', 'src/backup alone writes and reads archives (tar) and seals their secrets (age).'),
    {
      name: 'nothing-imports-main',
      comment: 'src/main.ts is the composition root: it imports the parts, nothing imports it.',
      severity: 'error',
      from: {},
      to: { path: '^src/main\\.ts$' },
    },
    {
      name: 'messages-import-nothing-of-src',
      comment: 'src/messages is the contract every layer shares; it depends on no other part of magpie.',
      severity: 'error',
      from: { path: '^src/messages/' },
      to: { path: '^src/', pathNot: '^src/messages/' },
    },
    {
      name: 'messages-only-zod',
      comment: 'src/messages uses zod and node builtins only.',
      severity: 'error',
      from: { path: '^src/messages/' },
      to: { dependencyTypesNot: ['local', 'core'], pathNot: '(^|/)node_modules/zod/' },
    },
    {
      name: 'bus-imports-no-higher-layer',
      comment:
        'src/bus is infrastructure: it imports the contract (messages), the pure schedule (time) and the ' +
        'base folders (errors, log, lifecycle, config, commands, telemetry\'s facade). Its stores implement the ports of the ' +
        'folders using them structurally; a type it needs lives in src/messages or is its own.',
      severity: 'error',
      from: { path: '^src/bus/' },
      to: {
        path: '^src/',
        pathNot: '^src/(bus|messages|time|errors|log|lifecycle|config|commands)/|^src/telemetry/tracing\\.ts$',
      },
    },
    {
      name: 'not-to-unresolvable',
      comment: 'An import that resolves to nothing is a typo or a missing package.',
      severity: 'error',
      from: {},
      to: { couldNotResolve: true },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      mainFields: ['module', 'main', 'types', 'typings'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};

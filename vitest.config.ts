import { defineConfig } from 'vitest/config';
import LongFirstSequencer from './test/long-first-sequencer.js';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/fakes/global-setup.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    maxWorkers: 2,
    sequence: { sequencer: LongFirstSequencer },
  },
});

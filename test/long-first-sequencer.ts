/**
 * Vitest runs test files in the order its sequencer gives; on a fresh clone
 * (no results cache) that is by file size, so the two-minute chaos run, a
 * small file, started last and ran alone while the other worker sat idle.
 * Files known to be long go first; the rest keep vitest's order.
 */
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Paths (from the project root) of the files that take a minute or more, or half of one with a Redis Cluster of nine servers. */
const LONG = [
  'test/integration/chaos/chaos.test.ts',
  'test/integration/sentinel/failover.test.ts',
  'test/integration/cluster/failover.test.ts',
  'test/e2e/cluster-stop.test.ts',
];

export default class LongFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const isLong = (f: TestSpecification) => LONG.some((p) => f.moduleId.endsWith(p));
    return [...sorted.filter(isLong), ...sorted.filter((f) => !isLong(f))];
  }
}

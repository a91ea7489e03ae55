/** `magpie doctor`'s Redis check run on its own, as the Cluster and Sentinel tests read it. */
import type { Config } from '../../src/config/index.js';
import type { CheckResult } from '../../src/ops/doctor.js';
import { DoctorRedis, redisCheck } from '../../src/ops/doctor-redis.js';

/** The Redis check's results for `config` (its connection closed afterwards). */
export async function redisCheckResults(config: Config): Promise<CheckResult[]> {
  const shared = new DoctorRedis();
  try {
    const results = await redisCheck(config, shared).run(new AbortController().signal);
    return Array.isArray(results) ? results : [results];
  } finally {
    shared.close();
  }
}

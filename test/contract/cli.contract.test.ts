/** The Channel contract for the CLI channel, on the run's redis-server (the harness: cli-harness.ts). */
import { describeChannelContract } from './channel-contract.js';
import { cli } from './cli-harness.js';

describeChannelContract('cli', cli);

/** The Matrix channel adapter (matrix-js-sdk); the gateway builds it through its descriptor (`descriptor.ts`). */
export type { MatrixChannelOptions } from './channel.js';
export { MatrixChannel } from './channel.js';

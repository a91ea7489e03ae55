/** The WhatsApp channel adapter (Cloud API over fetch); the gateway builds it through its descriptor (`descriptor.ts`). */
export type { WhatsAppChannelOptions, WhatsAppChannelParts } from './channel.js';
export { WhatsAppChannel } from './channel.js';

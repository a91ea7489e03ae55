/** The Slack channel adapter (@slack/bolt, Socket Mode); the gateway builds it through its descriptor (`descriptor.ts`). */
export type { SlackChannelOptions } from './channel.js';
export { SlackChannel } from './channel.js';

/**
 * Which agent answers a message: a channel that knows (the API names the
 * agent as its `model`) says so in `metadata.agent`; otherwise the first
 * route of agents.json whose every given field matches, else the default.
 *
 * A bot account is a channel instance of its own, named `<channel>-<account>`
 * (`telegram-family`): a route's `channel` matches every account of the
 * channel, its `account` one of them (`default` for the bot without a name).
 */
import type { InboundMessageInput } from '../messages/messages.js';
import type { AgentsFile, Route } from './spec.js';

/** The channel and account of an instance name: `telegram-family` → telegram, family. */
export function channelAccount(instance: string): { channel: string; account: string } {
  const dash = instance.indexOf('-');
  return dash < 0
    ? { channel: instance, account: 'default' }
    : { channel: instance.slice(0, dash), account: instance.slice(dash + 1) };
}

function matches(
  route: Route,
  message: Pick<InboundMessageInput, 'channel' | 'chatId' | 'senderId'>,
): boolean {
  const { channel, account } = channelAccount(message.channel);
  if (route.channel !== undefined && route.channel !== channel && route.channel !== message.channel)
    return false;
  if (route.account !== undefined && route.account !== account) return false;
  if (route.chat !== undefined && route.chat !== message.chatId) return false;
  if (route.sender !== undefined && route.sender !== (message.senderId ?? '')) return false;
  return true;
}

/** The id of the agent that answers `message`. */
export function agentFor(
  message: Pick<InboundMessageInput, 'channel' | 'chatId' | 'senderId' | 'metadata'>,
  agents: Pick<AgentsFile, 'agents' | 'routes' | 'defaultAgent'>,
): string {
  const named = message.metadata?.agent;
  if (typeof named === 'string' && agents.agents.some((a) => a.id === named)) return named;
  return agents.routes.find((route) => matches(route, message))?.agent ?? agents.defaultAgent;
}

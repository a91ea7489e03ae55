/**
 * Discord's buttons: an OutboundMessage's actions as one action row of
 * buttons (secondary style, "Deny…" in red), each carrying its command as
 * `custom_id`; and a button interaction read as a Press (channels/press.ts
 * decides what it becomes) in the chat a message there would be in: a DM
 * or server channel is `discord:<channelId>`, a thread
 * `discord:<parentChannelId>/<threadId>` (a named bot's: `discord-<account>:…`).
 */
import { type ButtonInteraction, ButtonStyle, ComponentType } from 'discord.js';
import type { OutboundAction } from '../../messages/messages.js';
import type { Press } from '../press.js';

/** A message component row as Discord's REST API takes it. */
export interface ActionRowJson {
  type: ComponentType.ActionRow;
  components: Array<{ type: ComponentType.Button; style: ButtonStyle; label: string; custom_id: string }>;
}

/** A message's actions as the `components` of its last part: one row of buttons. */
export function actionRows(actions: readonly OutboundAction[]): ActionRowJson[] {
  return [
    {
      type: ComponentType.ActionRow,
      components: actions.map((a) => ({
        type: ComponentType.Button,
        style: /^deny\b/i.test(a.label) ? ButtonStyle.Danger : ButtonStyle.Secondary,
        label: a.label,
        custom_id: a.command,
      })),
    },
  ];
}

/** The `components` of a part: the actions' row when there are any. */
export function buttonsBody(actions: readonly OutboundAction[] | undefined): {
  components?: ActionRowJson[];
} {
  return actions && actions.length > 0 ? { components: actionRows(actions) } : {};
}

/**
 * The press a button interaction is: its `custom_id`, by the user who clicked, in the button's
 * chat of `channelName` (`discord`, or `discord-<account>`: the bot whose button it is).
 */
export function pressOf(interaction: ButtonInteraction, channelName: string): Press {
  const channelId = interaction.channelId ?? interaction.message.channelId;
  const channel = interaction.channel;
  const parentId = channel?.isThread() ? channel.parentId : null;
  const user = interaction.user;
  const nick = interaction.inCachedGuild() ? interaction.member.displayName : undefined;
  return {
    id: `${channelName}:${channelId}:int:${interaction.id}`,
    channel: channelName,
    data: interaction.customId,
    presser: {
      id: user.id,
      username: user.username,
      displayName: nick ?? user.globalName ?? user.username,
      bot: user.bot,
    },
    chatId: parentId ?? channelId,
    ...(parentId ? { threadId: channelId } : {}),
    isGroup: interaction.guildId !== null,
    messageId: interaction.message.id,
    receivedAt: interaction.createdAt.toISOString(),
    metadata: { username: user.username, ...(interaction.guildId ? { guildId: interaction.guildId } : {}) },
  };
}

/**
 * The channels' part of the configuration, built from the registry: every
 * descriptor's variables in the schema, its typed settings under
 * `config.channels.<name>`, its live-reply switch and its secret values.
 */
import type { z } from 'zod';
import type { ChannelDescriptor, SettingsOf } from '../channels/descriptor.js';
import { CHANNELS } from '../channels/registry.js';

type Registered = (typeof CHANNELS)[number];
// biome-ignore lint/suspicious/noExplicitAny: any descriptor, whatever its settings
type AnyDescriptor = ChannelDescriptor<string, z.ZodRawShape, any>;
type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void
  ? I
  : never;

/** Every registered channel's variables, as one zod shape. */
export type ChannelEnvShape = UnionToIntersection<Registered['env']>;

/** `config.channels`: each registered channel's typed settings under its name. */
export type ChannelSettings = { readonly [D in Registered as D['name']]: SettingsOf<D> };

/** The variables of every registered channel, in registry order, for the environment schema. */
export function channelEnvShape(): ChannelEnvShape {
  return Object.assign({}, ...CHANNELS.map((d) => d.env)) as ChannelEnvShape;
}

/** Each channel's settings from the parsed environment. */
export function channelSettings(env: Record<string, unknown>): ChannelSettings {
  const descriptors: readonly AnyDescriptor[] = CHANNELS;
  return Object.fromEntries(descriptors.map((d) => [d.name, d.settings(env)])) as ChannelSettings;
}

/** The channels whose stream switch (`<NAME>_STREAM`) is set, and whether it is on. */
export function streamSwitches(env: Record<string, unknown>): Record<string, boolean> {
  const descriptors: readonly AnyDescriptor[] = CHANNELS;
  return Object.fromEntries(
    descriptors.flatMap((d) => {
      const on = d.stream === undefined ? undefined : env[d.stream];
      return typeof on === 'boolean' ? [[d.name, on] as const] : [];
    }),
  );
}

/** Every channel's secret values (unset ones included as undefined). */
export function channelSecrets(channels: ChannelSettings): (string | undefined)[] {
  const descriptors: readonly AnyDescriptor[] = CHANNELS;
  const settings = channels as Readonly<Record<string, unknown>>;
  return descriptors.flatMap((d) => [...d.secrets(settings[d.name])]);
}

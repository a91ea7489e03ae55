/**
 * What the configuration needs of a channel — its variables, its typed
 * settings, its live-reply switch and its secret values — and the channels'
 * part of a Config built from them. Config imports no channel: the channel
 * registry (src/channels/registry.ts) hands its descriptors, which are these
 * slices and more, to `parseConfigWith`/`loadConfigWith` from above
 * (src/app/config.ts), so every folder may import config without a cycle.
 */
import type { z } from 'zod';

/** A channel's slice of the configuration (every `ChannelDescriptor` is one). */
export interface ChannelConfigSlice<
  Name extends string = string,
  Shape extends z.ZodRawShape = z.ZodRawShape,
  Settings = unknown,
> {
  /** The channel's name: `config.channels.<name>`. */
  readonly name: Name;
  /** Its environment variables; each is listed with its default in `.env.example`. */
  readonly env: Shape;
  /** The typed settings (`config.channels.<name>`) from its parsed variables. */
  settings(env: z.output<z.ZodObject<Shape>>): Settings;
  /** Its live-reply switch (`<NAME>_STREAM`, over MAGPIE_STREAM), one of `env`'s variables. */
  readonly stream?: keyof Shape & string;
  /** The secret values of its settings (tokens, passwords, credentials inside URLs), redacted everywhere. */
  secrets(settings: Settings): readonly (string | undefined)[];
}

/**
 * `config.channels`: each channel's settings under its name. Empty here; each
 * channel's descriptor adds its entry by augmenting this interface, e.g.
 * `declare module '../../config/channel-slices.js' { interface ChannelSettingsMap { web: … } }`.
 */
// biome-ignore lint/suspicious/noEmptyInterface: filled by the channels' module augmentations
export interface ChannelSettingsMap {}

// biome-ignore lint/suspicious/noExplicitAny: any slice, whatever its settings
export type AnyChannelSlice = ChannelConfigSlice<string, z.ZodRawShape, any>;

/** The variables of every channel, in the order given, for the environment schema. */
export function channelEnvShape(slices: readonly AnyChannelSlice[]): z.ZodRawShape {
  return Object.assign({}, ...slices.map((d) => d.env));
}

/** Each channel's settings from the parsed environment. */
export function channelSettings(
  slices: readonly AnyChannelSlice[],
  env: Record<string, unknown>,
): ChannelSettingsMap {
  return Object.fromEntries(slices.map((d) => [d.name, d.settings(env)])) as ChannelSettingsMap;
}

/** The channels whose stream switch (`<NAME>_STREAM`) is set, and whether it is on. */
export function streamSwitches(
  slices: readonly AnyChannelSlice[],
  env: Record<string, unknown>,
): Record<string, boolean> {
  return Object.fromEntries(
    slices.flatMap((d) => {
      const on = d.stream === undefined ? undefined : env[d.stream];
      return typeof on === 'boolean' ? [[d.name, on] as const] : [];
    }),
  );
}

/** Every channel's secret values (unset ones dropped). */
export function channelSecrets(slices: readonly AnyChannelSlice[], settings: ChannelSettingsMap): string[] {
  const bySlice = settings as unknown as Readonly<Record<string, unknown>>;
  return slices.flatMap((d) => d.secrets(bySlice[d.name]).filter((v): v is string => typeof v === 'string'));
}

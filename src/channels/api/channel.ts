/**
 * The API channel (`api`, gateway side): serves the OpenAI-compatible HTTP
 * API on its own listener (server.ts) and delivers each turn's messages to
 * the request waiting for them, through the request's reply address (the
 * CLI's reply lists, bus/reply-lists.ts: kept for a while and published, so
 * any gateway may deliver what another gateway's request waits for). A
 * message that names no address (a turn resumed after `/approve`, a
 * reminder) goes to its session's address (exchange.ts).
 */
import type { Server } from 'node:http';
import type { Bus } from '../../bus/bus.js';
import { AppError, describeError, ExitCode } from '../../errors/index.js';
import type { Logger } from '../../log/index.js';
import type { LiveUpdate } from '../../messages/live-update.js';
import { type OutboundMessage, sessionKeyOf } from '../../messages/messages.js';
import { cliLiveChannel, replyAddresses } from '../cli/cli-channel.js';
import type { Channel } from '../types.js';
import { sessionAddress } from './exchange.js';
import { apiApp } from './server.js';
import type { ApiSettings } from './settings.js';

export interface ApiChannelOptions {
  bus: Bus;
  logger: Logger;
  settings: ApiSettings;
  maxMediaBytes: number;
  /** Image URLs on private addresses are read too (MAGPIE_WEB_ALLOW_PRIVATE, as for web_fetch). @defaultValue false */
  allowPrivateImages?: boolean;
  /** The agents a request may name. @defaultValue ['main'] */
  agents?: readonly string[];
}

export class ApiChannel implements Channel {
  readonly name = 'api';
  readonly #o: ApiChannelOptions;
  readonly #logger: Logger;
  #server: Server | undefined;

  /** Refuses settings it cannot serve: no port, or a port and no key (CONFIG_INVALID, exit 2). */
  constructor(options: ApiChannelOptions) {
    if (options.settings.port === undefined || options.settings.keys.length === 0)
      throw new AppError(
        'CONFIG_INVALID',
        'MAGPIE_API_PORT is set but MAGPIE_API_KEYS lists no key:name pair',
        {
          exitCode: ExitCode.config,
        },
      );
    this.#o = options;
    this.#logger = options.logger.child({ channel: 'api' });
  }

  /** The address it listens on (after `start`). */
  get port(): number {
    const address = this.#server?.address();
    return typeof address === 'object' && address ? address.port : 0;
  }

  async start(): Promise<void> {
    const { settings } = this.#o;
    const app = apiApp({
      bus: this.#o.bus,
      logger: this.#logger,
      keys: settings.keys,
      agents: this.#o.agents ?? ['main'],
      maxBodyBytes: settings.maxBodyBytes,
      maxMediaBytes: this.#o.maxMediaBytes,
      timeoutMs: settings.timeoutMs,
      maxConcurrent: settings.maxConcurrent,
      allowPrivateImages: this.#o.allowPrivateImages ?? false,
    });
    this.#server = await new Promise<Server>((resolve, reject) => {
      const server = app.listen(settings.port ?? 0, settings.host, (err?: Error) => {
        if (err)
          reject(
            new AppError(
              'CONFIG_INVALID',
              `the API cannot listen on ${settings.host}:${settings.port}: ${err.message}`,
              {
                cause: err,
                exitCode: ExitCode.config,
              },
            ),
          );
        else resolve(server);
      });
    });
    this.#logger.info({ host: settings.host, port: this.port, keys: settings.keys.length }, 'API listening');
  }

  async stop(): Promise<void> {
    const server = this.#server;
    this.#server = undefined;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Delivers the message to the requests waiting for it; none waiting is not an error (the list keeps it a while). */
  async send(message: OutboundMessage): Promise<void> {
    const payload = JSON.stringify(message);
    const addresses = replyAddresses(message);
    if (addresses.length === 0) addresses.push(sessionAddress(sessionKeyOf(message)));
    try {
      for (const address of addresses) await this.#o.bus.pushCliReply(address, payload);
    } catch (err) {
      throw new AppError('DELIVERY_TRANSIENT', `API answer not kept: ${describeError(err)}`, {
        cause: err,
        transient: true,
      });
    }
  }

  /** Forwards a snapshot to the streaming requests waiting on the turn. Never throws. */
  async preview(update: LiveUpdate): Promise<void> {
    const addresses = replyAddresses(update);
    if (addresses.length === 0) addresses.push(sessionAddress(sessionKeyOf(update)));
    const payload = JSON.stringify(update);
    for (const address of addresses) {
      try {
        await this.#o.bus.publish(cliLiveChannel(address), payload);
      } catch (err) {
        this.#logger.debug({ err: describeError(err), turn: update.turn }, 'live snapshot not forwarded');
      }
    }
  }

  startActivity(): void {}

  stopActivity(): void {}
}

/**
 * The stdio transport for MCP servers: a child process speaking
 * newline-delimited JSON-RPC on stdin/stdout (the SDK's framing). Unlike the
 * SDK's own transport it gives the child exactly the environment it is handed
 * (nothing of magpie's is added), starts it in its own process group (so a
 * Ctrl-C meant for magpie does not kill it mid-turn), and on close ends the
 * whole group — `npx` and the server it started alike.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { AppError } from '../errors/index.js';

export interface ChildTransportOptions {
  command: string;
  args: string[];
  /** The child's whole environment. */
  env: Record<string, string>;
  cwd?: string;
  /** Each line the child writes to stderr. */
  onStderr?: (line: string) => void;
  /** How long close waits for the child after closing its stdin, and again after SIGTERM. @defaultValue 2_000 */
  closeGraceMs?: number;
}

/** An MCP transport over a child process's stdin/stdout. */
export class ChildProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #o: ChildTransportOptions;
  readonly #buffer = new ReadBuffer();
  #child: ChildProcess | undefined;
  #exited: Promise<void> | undefined;
  #closing: Promise<void> | undefined;

  constructor(options: ChildTransportOptions) {
    this.#o = options;
  }

  /** The child's process id while it runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Spawns the child; rejects when it cannot start (ENOENT, EACCES). */
  start(): Promise<void> {
    if (this.#child) return Promise.reject(new AppError('INTERNAL', 'stdio transport already started'));
    return new Promise((resolve, reject) => {
      const child = spawn(this.#o.command, this.#o.args, {
        env: this.#o.env,
        ...(this.#o.cwd ? { cwd: this.#o.cwd } : {}),
        stdio: ['pipe', 'pipe', 'pipe'],
        detached: true,
        windowsHide: true,
      });
      this.#child = child;
      this.#exited = new Promise((done) => child.once('close', () => done()));
      child.once('error', (err) => {
        reject(err);
        this.onerror?.(err);
      });
      child.once('spawn', () => resolve());
      child.once('close', () => {
        if (this.#child === child) this.#child = undefined;
        killGroup(child, 'SIGTERM'); // what the server left running (npx's child) goes with it
        this.onclose?.();
      });
      child.stdin?.on('error', (err) => this.onerror?.(err));
      child.stdout?.on('data', (chunk: Buffer) => this.#read(chunk));
      child.stdout?.on('error', (err) => this.onerror?.(err));
      this.#followStderr(child);
    });
  }

  send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    if (!stdin || stdin.destroyed) return Promise.reject(new AppError('TOOL_FAILED', 'not connected'));
    return new Promise((resolve) => {
      if (stdin.write(serializeMessage(message))) resolve();
      else stdin.once('drain', () => resolve());
    });
  }

  /** Closes stdin, then SIGTERM, then SIGKILL to the child's process group, each after a grace period. */
  close(): Promise<void> {
    this.#closing ??= (async () => {
      const child = this.#child;
      const exited = this.#exited;
      this.#buffer.clear();
      if (!child || !exited) return;
      const grace = this.#o.closeGraceMs ?? 2_000;
      const wait = () =>
        Promise.race([
          exited.then(() => true),
          new Promise<boolean>((r) => setTimeout(r, grace, false).unref()),
        ]);
      child.stdin?.end();
      if (await wait()) return;
      killGroup(child, 'SIGTERM');
      if (await wait()) return;
      killGroup(child, 'SIGKILL');
      await exited;
    })();
    return this.#closing;
  }

  #read(chunk: Buffer): void {
    this.#buffer.append(chunk);
    for (;;) {
      let message: JSONRPCMessage | null;
      try {
        message = this.#buffer.readMessage();
      } catch (err) {
        this.onerror?.(err instanceof Error ? err : new AppError('TOOL_FAILED', String(err)));
        continue;
      }
      if (message === null) return;
      this.onmessage?.(message);
    }
  }

  #followStderr(child: ChildProcess): void {
    let partial = '';
    child.stderr?.on('data', (chunk: Buffer) => {
      const lines = (partial + chunk.toString('utf8')).split('\n');
      partial = (lines.pop() ?? '').slice(-4_000);
      for (const line of lines) if (line.trim() !== '') this.#o.onStderr?.(line.trimEnd());
    });
  }
}

/** Signals the child's process group (it leads one: spawned detached); a group already gone is fine. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(process.platform === 'win32' ? child.pid : -child.pid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ESRCH') throw err;
  }
}

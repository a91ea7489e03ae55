/**
 * signal-cli's JSON-RPC 2.0 over HTTP (`POST <SIGNAL_RPC_URL>/api/v1/rpc`), one
 * request per call, with a time limit. Every call names the account
 * (`account`), which a multi-account daemon needs and a single-account one
 * ignores. A JSON-RPC error becomes a SignalRpcError carrying its code, so the
 * sender can tell a refusal no retry fixes (an unknown recipient) from a
 * passing one (signal-cli's I/O error, Signal's rate limit).
 */
import { randomUUID } from 'node:crypto';
import { AppError, describeError } from '../../errors/index.js';
import { readCapped } from '../../net/read-capped.js';

/** signal-cli's error codes (SignalJsonRpcCommandHandler, JSON-RPC's own). */
export const RPC_ERRORS = {
  userError: -1,
  ioError: -3,
  untrustedKey: -4,
  rateLimit: -5,
  methodNotFound: -32601,
  internal: -32603,
} as const;

/** Codes a later attempt may pass (signal-cli's I/O and internal errors, Signal's rate limit). */
const TRANSIENT_CODES = new Set<number>([RPC_ERRORS.ioError, RPC_ERRORS.rateLimit, RPC_ERRORS.internal]);

/** The largest answer read (getAttachment answers in base64, so the media cap plus a third). */
const DEFAULT_MAX_ANSWER_BYTES = 64 * 1024 * 1024;

/** signal-cli answered a call with a JSON-RPC error. */
export class SignalRpcError extends AppError {
  readonly rpcCode: number;
  constructor(method: string, rpcCode: number, message: string) {
    const transient = TRANSIENT_CODES.has(rpcCode);
    super(
      transient ? 'DELIVERY_TRANSIENT' : 'DELIVERY_PERMANENT',
      `signal-cli refused ${method} (${rpcCode}): ${message}`,
      { transient },
    );
    this.rpcCode = rpcCode;
  }
}

export interface SignalRpcOptions {
  /** SIGNAL_RPC_URL: the daemon's HTTP root, e.g. http://127.0.0.1:8080. */
  url: string;
  /** SIGNAL_ACCOUNT, sent as every call's `account`. */
  account: string;
  /** Time limit of one call. @defaultValue 30000 */
  timeoutMs?: number;
  /** The largest answer read. @defaultValue 64 MiB */
  maxAnswerBytes?: number;
}

/** A JSON-RPC client of one signal-cli daemon, for one account. */
export class SignalRpc {
  readonly endpoint: string;
  private readonly account: string;
  private readonly timeoutMs: number;
  private readonly maxAnswerBytes: number;

  constructor(options: SignalRpcOptions) {
    this.endpoint = new URL('api/v1/rpc', withSlash(options.url)).toString();
    this.account = options.account;
    this.timeoutMs = options.timeoutMs ?? 30_000;
    this.maxAnswerBytes = options.maxAnswerBytes ?? DEFAULT_MAX_ANSWER_BYTES;
  }

  /**
   * Calls `method` and resolves its `result`. Rejects with a SignalRpcError for a JSON-RPC
   * error, a transient AppError when the daemon cannot be reached or answers badly.
   *
   * @example await rpc.call('sendTyping', { recipient: ['+4915112345678'] })
   */
  async call<T = unknown>(
    method: string,
    params: Record<string, unknown> = {},
    signal?: AbortSignal,
  ): Promise<T> {
    const timeout = AbortSignal.timeout(this.timeoutMs);
    const id = randomUUID();
    let res: Response;
    try {
      res = await fetch(this.endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, account: this.account } }),
        signal: signal ? AbortSignal.any([signal, timeout]) : timeout,
      });
    } catch (err) {
      throw new AppError('DELIVERY_TRANSIENT', `signal-cli unreachable (${method}): ${describeError(err)}`, {
        cause: err,
        transient: true,
      });
    }
    let body: Awaited<ReturnType<typeof readCapped>> | undefined;
    try {
      body = res.body ? await readCapped(res.body, this.maxAnswerBytes) : undefined;
    } catch (err) {
      throw new AppError(
        'DELIVERY_TRANSIENT',
        `signal-cli's answer to ${method} broke off: ${describeError(err)}`,
        {
          cause: err,
          transient: true,
        },
      );
    }
    if (body?.over) throw new AppError('DELIVERY_PERMANENT', `signal-cli's answer to ${method} is too large`);
    if (!res.ok) {
      const permanent = res.status >= 400 && res.status < 500 && res.status !== 429;
      throw new AppError(
        permanent ? 'DELIVERY_PERMANENT' : 'DELIVERY_TRANSIENT',
        `signal-cli answered HTTP ${res.status} to ${method}`,
        { transient: !permanent },
      );
    }
    const answer = parseAnswer(body?.bytes.toString('utf8') ?? '');
    if (!answer || answer.id !== id) {
      throw new AppError('DELIVERY_TRANSIENT', `signal-cli gave no JSON-RPC answer to ${method}`, {
        transient: true,
      });
    }
    if (answer.error) {
      throw new SignalRpcError(method, Number(answer.error.code ?? 0), String(answer.error.message ?? ''));
    }
    return answer.result as T;
  }
}

interface Answer {
  id?: unknown;
  result?: unknown;
  error?: { code?: unknown; message?: unknown };
}

function parseAnswer(text: string): Answer | undefined {
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Answer)
      : undefined;
  } catch {
    return undefined;
  }
}

/** A URL with its trailing slash (paths are resolved under it). */
export function withSlash(url: string): string {
  return url.endsWith('/') ? url : `${url}/`;
}

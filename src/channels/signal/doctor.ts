/**
 * `magpie doctor`'s Signal check (skipped unless SIGNAL_RPC_URL and
 * SIGNAL_ACCOUNT are set): the daemon answers `version`, and the account is
 * one it holds — `listAccounts` on a multi-account daemon; a single-account
 * daemon (`-a +NUMBER daemon`, which has no `listAccounts`) runs only with a
 * registered account, so its answer to an account call is the proof.
 */
import { describeError } from '../../errors/index.js';
import { type Check, failed, pass, skipped } from '../../ops/doctor.js';
import { RPC_ERRORS, SignalRpc, SignalRpcError } from './rpc.js';

/** The settings the check reads. */
export interface SignalCheckSettings {
  rpcUrl: string | undefined;
  account: string | undefined;
}

/** signal-cli's daemon is reachable and holds SIGNAL_ACCOUNT. */
export function signalCheck(settings: SignalCheckSettings): Check {
  return {
    name: 'signal',
    async run(signal) {
      const { rpcUrl, account } = settings;
      if (!rpcUrl && !account) return skipped('SIGNAL_RPC_URL not set');
      if (!rpcUrl)
        return failed(
          'SIGNAL_RPC_URL not set',
          'put signal-cli’s daemon address (http://127.0.0.1:PORT) in .env',
        );
      if (!account)
        return failed('SIGNAL_ACCOUNT not set', 'put the Signal number signal-cli is linked to (+…) in .env');
      const rpc = new SignalRpc({ url: rpcUrl, account, timeoutMs: 5000 });
      let version: string;
      try {
        version = (await rpc.call<{ version?: string }>('version', {}, signal))?.version ?? '?';
      } catch (err) {
        return failed(
          `signal-cli not reachable at ${rpc.endpoint}: ${describeError(err)}`,
          `start it: signal-cli -a ${account} daemon --http 127.0.0.1:PORT (README: Signal), and check SIGNAL_RPC_URL`,
        );
      }
      try {
        const accounts = await rpc.call<Array<{ number?: unknown; aci?: unknown }>>(
          'listAccounts',
          {},
          signal,
        );
        const held =
          Array.isArray(accounts) && accounts.some((a) => a.number === account || a.aci === account);
        if (!held)
          return failed(
            `signal-cli ${version} does not hold ${account}`,
            `link it: signal-cli link -n magpie (README: Signal), or fix SIGNAL_ACCOUNT`,
          );
        return pass(`signal-cli ${version}, account ${account} registered`);
      } catch (err) {
        if (err instanceof SignalRpcError && err.rpcCode === RPC_ERRORS.methodNotFound)
          return pass(`signal-cli ${version} (single-account daemon), account ${account}`);
        return failed(
          `signal-cli ${version} refused listAccounts: ${describeError(err)}`,
          'see signal-cli’s log',
        );
      }
    },
  };
}

/**
 * Speech against the spending limits: the characters spoken, priced by
 * MAGPIE_PRICE_TTS per million, reserved before speaking (a limit reached
 * means the reply stays text) and settled after as a call of model
 * `tts:<model>`, so /usage, the dashboard and the limits see it. Unpriced
 * speech is still checked against the per-minute guard of the store.
 */
import type { Logger } from '../log/index.js';
import type {
  BudgetLimitName,
  BudgetPeriod,
  Reservation,
  ReserveResult,
  Settlement,
  StoreLimits,
} from '../messages/budget.js';
import { toNano } from '../messages/budget.js';
import { zeroCounts } from '../messages/token-counts.js';

/** What speaking one reply is charged: held before, settled (or given back) after. */
export interface SpeechCharges {
  /** Holds the cost of `chars` characters for `session`; `ok: false` names the limit that refused. */
  hold(
    session: string,
    chars: number,
  ): Promise<{ ok: true; settle(spoken: boolean): Promise<void> } | { ok: false; limit: string }>;
}

/** What speech needs of the spending limits (src/budget's Budget has it; not imported: voice stays below agent). */
export interface SpeechBudget {
  readonly limits: StoreLimits;
  period(): BudgetPeriod;
  readonly store: {
    reserve(
      session: string,
      period: BudgetPeriod,
      estimate: { costNano: number; tokens: number },
      limits: StoreLimits,
    ): Promise<ReserveResult>;
    settle(reservation: Reservation, actual: Settlement, limits: StoreLimits): Promise<BudgetLimitName[]>;
    release(reservation: Reservation, limits: StoreLimits): Promise<void>;
  };
  noticeCrossed(crossed: readonly BudgetLimitName[], session: string): Promise<void>;
}

/** The cost in the prices' currency of `chars` characters at `pricePerMillion`. */
export function speechCost(chars: number, pricePerMillion: number | undefined): number {
  return pricePerMillion === undefined ? 0 : (chars * pricePerMillion) / 1_000_000;
}

/** Charges speech to a Budget (the daemon's shared store). */
export function budgetCharges(
  budget: SpeechBudget,
  options: { model: string; pricePerMillionChars: number | undefined; logger: Logger },
): SpeechCharges {
  return {
    async hold(session, chars) {
      const costNano = toNano(speechCost(chars, options.pricePerMillionChars));
      const held = await budget.store.reserve(
        session,
        budget.period(),
        { costNano, tokens: 0 },
        budget.limits,
      );
      if (!held.ok) return { ok: false, limit: held.limit };
      return {
        ok: true,
        async settle(spoken: boolean) {
          try {
            if (!spoken) {
              await budget.store.release(held.reservation, budget.limits);
              return;
            }
            const crossed = await budget.store.settle(
              held.reservation,
              { model: `tts:${options.model}`, counts: zeroCounts(), costNano, hour: budget.period().hour },
              budget.limits,
            );
            await budget.noticeCrossed(crossed, session);
          } catch (err) {
            options.logger.warn({ err }, 'speech could not be settled; its estimate stays counted');
          }
        },
      };
    },
  };
}

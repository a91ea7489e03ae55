/** Reading a fake Telegram chat in the approval tests: what it shows, awaiting a text, the question's code. */
import type { FakeTelegram } from '../../fakes/telegram-server.js';

/** The texts sent to a chat, and a wait for one matching `pattern` (failing with what the chat shows). */
export function chatTexts(fake: () => FakeTelegram) {
  const texts = (id: number) =>
    fake()
      .sent(id)
      .map((m) => m.text);
  const waitForText = (id: number, pattern: RegExp) =>
    fake()
      .waitFor(() => texts(id).some((t) => pattern.test(t)), 20_000)
      .catch((err: unknown) => {
        throw new Error(`${String(err)}; waiting for ${pattern} in ${JSON.stringify(texts(id))}`);
      });
  return { texts, waitForText };
}

/** The code of an approval question in `text`. */
export const codeIn = (text: string) => /\/approve ([A-Z2-9]{5})/.exec(text)?.[1];

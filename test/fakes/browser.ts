/** Headless Chromium for the browser end-to-end tests: Debian's /usr/bin/chromium through playwright-core. */
import { type Browser, chromium } from 'playwright-core';

/** Flags every browser test runs Chromium with (headless, no sandbox, no GPU, no first-run or background traffic). */
const BASE_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--no-first-run',
  '--disable-background-networking',
];

/** Launches /usr/bin/chromium with the base flags and any `extraArgs`. */
export function launchChromium(extraArgs: string[] = []): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: [...BASE_ARGS, ...extraArgs] });
}

import { existsSync } from 'node:fs';
import { chromium, type Browser } from 'playwright-core';

/** Debian's chromium (installed by scripts/install-test-deps.sh); CHROMIUM_PATH overrides. */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Why a browser suite cannot run here, or undefined when it can (for labSuite). */
export const chromiumMissing = (): string | undefined => (existsSync(CHROMIUM) ? undefined : `no browser at ${CHROMIUM} (Debian package chromium)`);

/**
 * Headless, no sandbox (root), and none of Chromium's own network traffic: this machine reaches
 * nothing but loopback, and background connections would only be refused.
 */
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-dev-shm-usage',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-default-apps',
  '--disable-domain-reliability',
  '--metrics-recording-only',
  '--no-default-browser-check',
  '--disable-features=MediaRouter,OptimizationHints,Translate',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}

/** Debian's Chromium through playwright-core, for the e2e suites that drive a real browser. */
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';

const CHROMIUM = '/usr/bin/chromium';
const ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'];
const OUTPUT_DIR = path.resolve('test-output');

export interface Chromium {
  context: BrowserContext;
  /** Closes the browser and deletes its throwaway profile. */
  close(): Promise<void>;
}

/** A headless Chromium with a fresh profile (so no cookie or cache carries over between suites). */
export async function launchChromium(options: { viewport?: { width: number; height: number } } = {}): Promise<Chromium> {
  const userDataDir = mkdtempSync(path.join(os.tmpdir(), 'fieldgate-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(userDataDir, { executablePath: CHROMIUM, args: ARGS, headless: true, ...options });
    return {
      context,
      close: async () => {
        try {
          await context.close();
        } finally {
          rmSync(userDataDir, { recursive: true, force: true });
        }
      },
    };
  } catch (error) {
    rmSync(userDataDir, { recursive: true, force: true });
    throw error;
  }
}

/** Where a screenshot named `name` goes (test-output/, created on first use). */
export function screenshotPath(name: string): string {
  mkdirSync(OUTPUT_DIR, { recursive: true });
  return path.join(OUTPUT_DIR, name);
}

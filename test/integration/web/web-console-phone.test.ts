/**
 * The web console on a 390 px phone in a real headless Chromium (Debian's `chromium`, driven by
 * playwright-core) against the real host wiring (startHost, echo runner; no containers needed): on every
 * page with a table, the cells that say what happened (the decision, the reason, who decided, the cap, the
 * cost) lie inside the viewport, measured by their bounding boxes, and the page does not scroll sideways.
 * Screenshots go to test-artifacts/web/ (phone-cards-*.png).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { chromium, type Browser, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApprovalService } from '../../../host/admin/approval-service.ts';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { resolvePaths } from '../../../host/config/paths.ts';
import { hostConfigSchema } from '../../../host/config/schema.ts';
import { createEchoRunner } from '../../fakes/echo-runner.ts';
import { waitFor } from '../../helpers/processes.ts';

const CHROMIUM = process.env.CARAPACE_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = path.resolve('test-artifacts/web');
const PHONE = { width: 390, height: 844 };
const LONG_REASON =
  'the owner did not answer within 5 min; a request that is not answered counts as deny, so the command did not run';

const suite = fs.existsSync(CHROMIUM) || process.env.CI ? describe : describe.skip;

interface Box {
  label: string;
  left: number;
  right: number;
  width: number;
}

suite('the web console on a 390 px phone', () => {
  let dir: string;
  let host: RunningHost;
  let approvals: ApprovalService | undefined;
  let browser: Browser;
  let page: Page;
  let base: string;
  let runId: number;

  beforeAll(async () => {
    fs.mkdirSync(ARTIFACTS, { recursive: true });
    dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-phone-')));
    const paths = resolvePaths({
      env: { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') },
      cwd: dir,
    });
    host = await startHost({
      paths,
      config: hostConfigSchema.parse({
        web: { listen: '127.0.0.1:0' },
        assistant: { timezone: 'Europe/Berlin' },
        security: { approval_timeout_ms: 600_000 },
      }),
      createRunner: async (deps) => {
        approvals = deps.approvals;
        return { runner: createEchoRunner(), close: async () => undefined };
      },
      logger: pino({ level: 'silent' }),
      redact: (s) => s,
    });
    const { store } = host;
    store.groups.add({ id: 'family', channel: 'local', chatId: 'family', name: 'family', isAdmin: false });

    // A run with a timeline, a tiny cost and a long reason; decided approvals; a pending push.
    const run = store.runs.start('family', 1, 0);
    runId = run.id;
    store.audit.record({
      runId,
      groupId: 'family',
      operation: 'bash',
      decision: 'approval-expired',
      reason: LONG_REASON,
      approver: 'timeout',
      details: { command: 'rm -rf /workspace/group/old-photos-from-the-holiday-in-2019' },
    });
    store.audit.record({
      runId,
      groupId: 'family',
      operation: 'credential.recipes',
      decision: 'approval-granted',
      reason: 'approved by the owner in the web console',
      approver: 'web:3f9a0c2e41b7d8a5',
    });
    store.runs.finish(runId, 'succeeded', 'answered the question and wrote the shopping list');
    store.db
      .prepare(
        `INSERT INTO gateway_usage (run_id, group_id, day, model, requests, prompt_tokens, completion_tokens, cost_micros)
         VALUES (?, 'family', strftime('%Y-%m-%d', 'now'), 'claude-haiku-4-5-20251001', 3, 1200, 340, 42)`,
      )
      .run(String(runId));
    const now = Date.now();
    store.db
      .prepare(
        `INSERT INTO approvals (id, run_id, group_id, operation, reason, params_json, params_hash, status,
                                created_at, expires_at, decided_at, decided_by)
         VALUES ('k7m2p9', ?, 'family', 'credential.recipes', 'it pushes to protected refs/heads/main', '{}', 'x',
                 'denied', ?, ?, ?, 'web:3f9a0c2e41b7d8a5')`,
      )
      .run(runId, now - 120_000, now + 480_000, now - 60_000);
    void approvals?.request({
      runId,
      groupId: 'family',
      operation: 'credential.recipes',
      reason: 'it pushes to protected refs/heads/main',
      params: {
        credential: 'recipes',
        remote: 'https://github.com/family/recipes.git',
        push: [{ ref: 'refs/heads/main', from: '1c4e9a02b7d3', to: '8f21d0c6e5a4' }],
        commits: [
          {
            id: '8f21d0c6e5a4',
            author: 'Family bot <bot@example.com>',
            date: new Date(now - 90_000).toISOString(),
            message: 'Add the waffle recipe\n\nFrom grandma’s card, with the syrup note.',
          },
        ],
        files: ['recipes/sweet/waffles.md', 'recipes/index.md'],
      },
    });

    const { url } = await createLocalClient(paths.socketFile).webLogin();
    base = new URL(url).origin;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
    });
    const context = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    page = await context.newPage();
    await page.goto(url);
    await Promise.all([page.waitForURL(`${base}/approvals`), page.click('#sign-in')]);
  }, 120_000);

  afterAll(async () => {
    await browser?.close();
    await host?.stop('end of test');
    fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  /** The bounding boxes of the cells with these column names, and the page's own widths. */
  const measure = async (labels: string[]) =>
    // Page code runs in the browser; this file is type-checked without the DOM's types.
    page.evaluate<{ boxes: Box[]; scroll: number; view: number }>(
      `({
        boxes: ${JSON.stringify(labels)}.flatMap((label) =>
          [...document.querySelectorAll('td[data-label="' + label + '"]')].map((td) => {
            const r = td.getBoundingClientRect();
            return { label, left: r.left, right: r.right, width: r.width };
          })),
        scroll: document.documentElement.scrollWidth,
        view: window.innerWidth,
      })`,
    );

  it.each([
    ['/audit', ['When', 'Operation', 'Decision', 'Reason', 'By']],
    ['/approvals', ['Operation', 'Outcome', 'By', 'When']],
    ['/runs', ['Status', 'Started', 'Took', 'Why it ended']],
    ['/runs/:run', ['When', 'What', 'Text or reason', 'Cost']],
    ['/spend', ['Today of cap', 'Daily cap', 'Cost', 'Priced']],
  ])('%s: each row’s key cells are inside the viewport, nothing scrolls sideways', async (route, labels) => {
    await page.goto(`${base}${route.replace(':run', String(runId))}`);
    const { boxes, scroll, view } = await measure(labels);
    // An empty cell is left out of its card (display: none); every label has shown cells.
    const shown = boxes.filter((b) => b.width > 0);
    for (const label of labels)
      expect(
        shown.some((b) => b.label === label),
        `${route}: a cell labelled ${label}`,
      ).toBe(true);
    for (const b of shown) {
      expect(b.left, `${route} ${b.label}`).toBeGreaterThanOrEqual(0);
      expect(b.right, `${route} ${b.label}`).toBeLessThanOrEqual(view);
    }
    expect(scroll).toBeLessThanOrEqual(view);
    await page.screenshot({
      path: path.join(ARTIFACTS, `phone-cards-${route.replace(/[/:]+/g, '-').replace(/^-/, '')}.png`),
      fullPage: true,
    });
  });

  it('sends a message to the admin group from the Message page, and shows the answer live', async () => {
    await page.goto(`${base}/message`);
    await page.fill('#message-text', 'what is for dinner?');
    await Promise.all([page.waitForURL(/\/message\?after=\d+$/), page.click('#message-form button')]);
    // The answer arrives after the page was rendered: the event stream makes the page fetch it.
    await page.locator('pre.reply', { hasText: 'echo: what is for dinner?' }).waitFor({ timeout: 20_000 });
    const box = await page.locator('#message-form').boundingBox();
    expect((box?.x ?? -1) >= 0 && (box?.x ?? 0) + (box?.width ?? 0) <= PHONE.width).toBe(true);
    await page.screenshot({ path: path.join(ARTIFACTS, 'phone-cards-message.png'), fullPage: true });
  });

  it('shows the pending push’s commits and files inside the viewport, with times in the owner’s zone', async () => {
    await page.goto(`${base}/approvals`);
    const commit = page.locator('li[data-commit="8f21d0c6e5a4"]');
    // The page re-renders when its event stream says something changed (the previous test's answer, say):
    // the element can be replaced between a wait and a measure, so the measure is what is waited for.
    const box = await waitFor('the commit laid out', async () => (await commit.boundingBox()) ?? undefined);
    expect((box?.x ?? -1) >= 0 && (box?.x ?? 0) + (box?.width ?? 0) <= PHONE.width).toBe(true);
    expect(await commit.textContent()).toContain('Add the waffle recipe');
    expect(await page.textContent('footer')).toContain('Times are in Europe/Berlin');
    expect(await page.locator('.ago').first().textContent()).toMatch(/ago|now/);
    await page.screenshot({ path: path.join(ARTIFACTS, 'phone-cards-approvals-push.png'), fullPage: true });
  });
});

/**
 * The web console in a real headless Chromium (Debian's `chromium`, driven by playwright-core) against a
 * real host with real containers: sign-in by a one-time link, an approval asked by a real run that appears
 * live and is approved in the page, a second browser that sees it decided without reloading, the refusals
 * of a POST without CSRF token and of a request without the cookie, the spend of the run that just
 * happened, and a phone-sized page without horizontal scrolling. Screenshots go to test-artifacts/web/.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { formatCost } from '../../host/web/format.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { bash, resultsOf, runTools, securityResponder } from '../fakes/security-responders.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

const CHROMIUM = process.env.CARAPACE_CHROMIUM ?? '/usr/bin/chromium';
const ARTIFACTS = path.resolve('test-artifacts/web');
/** The README's picture; written again only when CARAPACE_UPDATE_DOCS_SCREENSHOT=1. */
const DOCS_SCREENSHOT = path.resolve('docs/web-console.png');
const PHONE = { width: 390, height: 844 };

const suite = fs.existsSync(CHROMIUM) || process.env.CI ? describeDocker : describe.skip;

await suite(
  'e2e web console in headless Chromium: sign in, approve live, refuse without cookie or CSRF',
  () => {
    let h: E2eHost;
    let browser: Browser;
    let base: string;
    const contexts: BrowserContext[] = [];

    const loginLink = async () => {
      const res = await h.cli(['web', 'login']);
      expect(res.code, res.stderr).toBe(0);
      return res.stdout.trim();
    };
    const newContext = async (options: Parameters<Browser['newContext']>[0] = {}) => {
      const c = await browser.newContext(options);
      contexts.push(c);
      return c;
    };
    const signIn = async (context: BrowserContext): Promise<Page> => {
      const page = await context.newPage();
      await page.goto(await loginLink());
      await Promise.all([page.waitForURL(`${base}/approvals`), page.click('#sign-in')]);
      // The live stream is open: whatever happens from now on reaches this page.
      await page.waitForSelector('body[data-live-ready="true"]');
      return page;
    };
    const shot = (page: Page, name: string) =>
      page.screenshot({ path: path.join(ARTIFACTS, `${name}.png`), fullPage: true });

    beforeAll(async () => {
      fs.mkdirSync(ARTIFACTS, { recursive: true });
      h = await startE2eHost({
        config: {
          runs: { max_attempts: 1 },
          security: { approval_timeout_ms: 120_000 },
          // Priced, so the run that just happened has a cost to show.
          gateway: { prices: { 'fake-model': { input_per_mtok_usd: 3, output_per_mtok_usd: 15 } } },
          web: { listen: '127.0.0.1:0' },
        },
      });
      await h.addLocalGroups('alpha');
      const listening = await eventually(
        'the web console to listen',
        () => h.logEntries('web console listening')[0],
      );
      base = String(listening.url);
      // Root in a container cannot use Chromium's sandbox; elsewhere it stays on.
      browser = await chromium.launch({
        executablePath: CHROMIUM,
        args: process.getuid?.() === 0 ? ['--no-sandbox'] : [],
      });
    }, 240_000);
    afterAll(async () => {
      for (const c of contexts) await c.close().catch(() => undefined);
      await browser?.close();
      await h?.stop();
    }, 60_000);

    it('signs in with a one-time link, and a second use of the same link is refused', async () => {
      const link = await loginLink();
      const first = await (await newContext()).newPage();
      await first.goto(link);
      await Promise.all([first.waitForURL(`${base}/approvals`), first.click('#sign-in')]);
      const cookies = await first.context().cookies();
      expect(cookies.find((c) => c.name === 'carapace_session')).toMatchObject({
        httpOnly: true,
        sameSite: 'Strict',
      });

      const again = await (await newContext()).newPage();
      await again.goto(link);
      const [answer] = await Promise.all([again.waitForResponse(`${base}/login`), again.click('#sign-in')]);
      expect(answer.status()).toBe(403);
      expect(await again.textContent('#refused')).toContain('already used');
      expect(await again.context().cookies()).toEqual([]);
    }, 60_000);

    it('an approval asked by a real run appears live, is approved in the page, runs once, is confirmed in the admin chat, and a second browser sees it decided without reloading', async () => {
      const owner = await signIn(await newContext());
      const phone = await signIn(await newContext({ viewport: PHONE, isMobile: true, hasTouch: true }));
      // Set in the page: a reload or navigation would lose it.
      await phone.evaluate('window.notReloaded = true');

      const file = `FLAGGED-web-${crypto.randomBytes(4).toString('hex')}`;
      h.fake.setResponder(
        securityResponder({ alpha: runTools([bash(`touch ${file} && mkfifo fifo-${file}`)]) }),
      );
      const sent = h.send('alpha', '@Andy run the flagged command', 120);

      const card = owner.locator('.pending[data-approval]');
      await card.waitFor({ timeout: 60_000 });
      const id = (await card.getAttribute('data-approval')) ?? '';
      const text = (await card.locator('pre').textContent()) ?? '';
      // The full text the admin chat was shown: the same words, from the same formatter.
      const chatNotice = h.outbox('main').find((r) => r.text.startsWith(`Approval needed: ${id}`));
      expect(text).toBe(chatNotice?.text);
      expect(text).toContain(`touch ${file}`);

      await phone.locator(`.pending[data-approval="${id}"]`).waitFor();
      // Page code runs in the browser; this file is type-checked without the DOM's types.
      const widths = await phone.evaluate<{ scroll: number; view: number }>(
        '({ scroll: document.documentElement.scrollWidth, view: window.innerWidth })',
      );
      expect(widths.scroll).toBeLessThanOrEqual(widths.view);
      await shot(phone, 'approvals-phone-pending');
      if (process.env.CARAPACE_UPDATE_DOCS_SCREENSHOT === '1')
        await phone.screenshot({ path: DOCS_SCREENSHOT, fullPage: false });
      await shot(owner, 'approvals-desktop-pending');
      // The Runs page, open while the run waits for the owner, shows it active; it is followed below.
      const runs = await owner.context().newPage();
      await runs.goto(`${base}/runs`);
      await runs.waitForSelector('body[data-live-ready="true"]');
      expect(await runs.textContent('.active-run')).toMatch(/^alpha: run \d+$/);

      await Promise.all([
        owner.waitForURL(`${base}/approvals?decided=${id}`),
        card.locator('button.approve').click(),
      ]);
      expect(await owner.textContent('#notice')).toMatch(new RegExp(`Request ${id} is (approved|executed)`));

      const res = await sent;
      expect(res.code, res.stderr).toBe(0);
      expect(resultsOf(res.stdout)).toEqual(['exit code 0']);
      expect(fs.existsSync(path.join(h.paths.groupsDir, 'alpha', file))).toBe(true);
      // The run ended: the open Runs page shows it, live.
      await runs.locator('#runs').filter({ hasText: 'Nothing runs now.' }).waitFor();
      await shot(runs, 'runs');
      const decisions = h.host.store.audit
        .tail(200)
        .filter((r) => r.operation === 'bash' && JSON.parse(r.details ?? '{}').approvalId === id)
        .map((r) => r.decision);
      expect(decisions).toEqual(['approval-asked', 'approval-granted', 'approval-executed']);
      expect(h.host.store.approvals.get(id)?.status).toBe('executed');

      // Confirmed in the console's admin chat.
      await eventually('the confirmation in the admin chat', () =>
        h.outbox('main').find((r) => r.text.startsWith(`Decided in the web console: Approved ${id}`)),
      );

      // The phone saw it decided, live, in the same page.
      await phone
        .locator(`tr[data-approval="${id}"] .status`)
        .filter({ hasText: /approved|executed/ })
        .waitFor();
      expect(await phone.locator(`.pending[data-approval="${id}"]`).count()).toBe(0);
      expect(await phone.evaluate('window.notReloaded')).toBe(true);
      await shot(phone, 'approvals-phone-decided');
      // Every other page fits a phone too: wide tables scroll inside their own box, not the page.
      for (const page of ['/runs', '/spend', '/audit', '/groups', '/health', '/config', '/sessions']) {
        await phone.goto(`${base}${page}`);
        const fit = await phone.evaluate<{ scroll: number; view: number }>(
          '({ scroll: document.documentElement.scrollWidth, view: window.innerWidth })',
        );
        expect(fit.scroll, page).toBeLessThanOrEqual(fit.view);
        await shot(phone, `phone${page.replace('/', '-')}`);
      }

      // A POST without the CSRF token is refused, with the session cookie and all.
      const forged = await owner.request.post(`${base}/approvals/${id}/deny`, { form: { nothing: '1' } });
      expect(forged.status()).toBe(403);
      // A request without the cookie gets the sign-in page and nothing of the console.
      const anonymous = await fetch(`${base}/approvals`);
      expect(anonymous.status).toBe(401);
      expect(await anonymous.text()).not.toContain(id);
      const anonymousPost = await fetch(`${base}/approvals/${id}/deny`, { method: 'POST' });
      expect(anonymousPost.status).toBe(401);

      // The spend page shows what that run cost, as the gateway recorded it.
      const runId = h.runs('alpha').at(-1)?.id;
      const cost = h.host.store.db
        .prepare<[string], { micros: number }>(
          'SELECT SUM(cost_micros) AS micros FROM gateway_usage WHERE run_id = ?',
        )
        .get(String(runId));
      expect(cost?.micros).toBeGreaterThan(0);
      await owner.goto(`${base}/spend`);
      expect(await owner.textContent(`tr[data-run="${runId}"] .cost`)).toBe(formatCost(cost?.micros ?? 0));
      await shot(owner, 'spend');
      await owner.goto(`${base}/runs/${runId}`);
      expect(await owner.textContent('#run-cost')).toBe(formatCost(cost?.micros ?? 0));
      await shot(owner, 'run-timeline');
    }, 180_000);
  },
);

/**
 * Two WhatsApp numbers on one host (`[channels.whatsapp.home]`, `[channels.whatsapp.work]`): the real host
 * wiring (startHost) with both accounts made from config.toml by the WhatsApp definition, each a real Baileys
 * socket against its own crabline server, and an in-process runner that answers with its group's id and asks
 * the owner before a "risky" step. Both numbers sit in the same WhatsApp group: each account's group is its
 * own and is answered by its own number. An approval asked by the work account's group is decided in the
 * owner's "Message yourself" chat of the home account. Removing the work account's table and reloading stops
 * that number alone while the home number keeps answering.
 *
 * Group sends are taken at each account's socket seam (crabline closes the socket on a group send), as in
 * test/e2e/whatsapp.test.ts; everything else goes over the wire.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, expect, it } from 'vitest';
import type { ApprovalService } from '../../../host/admin/approval-service.ts';
import { startHost, type RunningHost } from '../../../host/app/host.ts';
import { EXAMPLE_CONFIG_FILE } from '../../../host/cli/cli-context.ts';
import { createLocalClient } from '../../../host/channels/local/local-client.ts';
import { createConfigFileStore } from '../../../host/config/config-file-store.ts';
import { resolvePaths } from '../../../host/config/paths.ts';
import { loadStartConfig } from '../../../host/config/safe-start.ts';
import type { AgentRunner, RunOutcome } from '../../../host/router/agent-runner.ts';
import { eventually } from '../../e2e/e2e-harness.ts';
import {
  FAKE_SELF_JID,
  FAKE_SELF_LID,
  groupSendsAtSeam,
  startFakeWhatsApp,
  waMessage,
  type FakeWhatsApp,
} from '../../fakes/whatsapp-fake.ts';
import {
  channelStatuses,
  channelsToml,
  seamedDefinitions,
  whatsappAccountTables,
  type WhatsAppSeam,
} from '../../helpers/account-channels.ts';
import { askRiskyCommand, RISKY_PARAMS } from '../../helpers/ask-risky-command.ts';

/** One WhatsApp group both numbers are members of. */
const SHARED = '120363000000000077@g.us';
const ALICE = '15551234567@s.whatsapp.net';
const ACCOUNTS = ['home', 'work'] as const;
type Account = (typeof ACCOUNTS)[number];

let dir: string;
let host: RunningHost | undefined;
const servers: FakeWhatsApp[] = [];

afterEach(async () => {
  await host?.stop('test over');
  host = undefined;
  for (const s of servers.splice(0)) await s.close().catch(() => undefined);
  fs.rmSync(dir, { recursive: true, force: true });
});

/** Answers with its group's id; a "risky" message asks the owner first and says whether it ran. */
function accountRunner(approvals: () => ApprovalService, executed: string[]): AgentRunner {
  return {
    start(ctx, callbacks) {
      const done = (async (): Promise<RunOutcome> => {
        const last = ctx.messages.at(-1)?.text ?? '';
        if (last.includes('risky')) {
          const r = await askRiskyCommand(approvals(), ctx);
          const ran = r.outcome === 'approved' && approvals().consume(r.id, RISKY_PARAMS);
          if (ran) executed.push(r.id);
          await callbacks.reply(ran ? `executed for ${ctx.group.id}` : `not executed: ${r.outcome}`);
        } else await callbacks.reply(`answered as ${ctx.group.id}`);
        return { ok: true, reason: 'completed' };
      })();
      return { accepted: Promise.resolve(), input: async () => false, stop: () => undefined, done };
    },
  };
}

/** `[channels.whatsapp.<name>]` for each number, as the owner writes them into config.toml. */
const configText = (urls: Partial<Record<Account, string>>) =>
  channelsToml({ whatsapp: whatsappAccountTables(urls) });

it('runs one WhatsApp number per account, answers each group through its own number, decides an approval across accounts and stops only the account removed at a reload', async () => {
  dir = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), 'carapace-wa-accounts-')));
  const paths = resolvePaths({
    env: { CARAPACE_CONFIG_DIR: path.join(dir, 'config'), CARAPACE_DATA_DIR: path.join(dir, 'data') },
    cwd: dir,
  });
  const server = {} as Record<Account, FakeWhatsApp>;
  const seam = {} as Record<Account, WhatsAppSeam>;
  for (const name of ACCOUNTS) {
    const own = path.join(dir, `crabline-${name}`);
    fs.mkdirSync(own);
    server[name] = await startFakeWhatsApp(own);
    servers.push(server[name]);
    seam[name] = groupSendsAtSeam();
  }
  // The WhatsApp definition as shipped, its sockets made through each account's seam.
  const definitions = await seamedDefinitions(paths, seam);
  fs.mkdirSync(paths.configDir, { recursive: true });
  fs.writeFileSync(paths.configFile, configText({ home: server.home.url, work: server.work.url }));
  const start = loadStartConfig({ configFile: paths.configFile, exampleFile: EXAMPLE_CONFIG_FILE });
  const executed: string[] = [];
  let approvals: ApprovalService | undefined;
  host = await startHost({
    paths,
    config: start.applied.config,
    reload: { start, exampleFile: EXAMPLE_CONFIG_FILE, watchDebounceMs: 60_000 },
    logger: pino({ level: process.env.DEBUG_LOG ? 'debug' : 'silent' }),
    redact: (s) => s,
    channelDefinitions: definitions,
    createRunner: async (deps) => {
      approvals = deps.approvals;
      return {
        runner: accountRunner(() => approvals as ApprovalService, executed),
        close: async () => undefined,
      };
    },
  });
  const running = host;
  const client = createLocalClient(paths.socketFile);
  const status = channelStatuses(paths.socketFile);
  await eventually('both numbers connected', async () => {
    const s = await status();
    return s.get('whatsapp.home')?.state === 'connected' && s.get('whatsapp.work')?.state === 'connected';
  });

  // The same WhatsApp group, registered once per account through the CLI's path: two groups, no collision.
  for (const name of ACCOUNTS)
    running.store.groups.add({ id: name, channel: `whatsapp.${name}`, chatId: SHARED, name, isAdmin: false });
  let seq = 0;
  const say = (name: Account, text: string) =>
    server[name].inject({
      chatJid: SHARED,
      senderJid: ALICE,
      pushName: 'Alice',
      text,
      messageId: `M${(seq += 1)}`,
    });
  const texts = (name: Account) => seam[name].sent.filter((s) => s.chatId === SHARED).map((s) => s.text);

  await say('home', '@Andy dinner?');
  await eventually('home answered', () => texts('home').includes('answered as home'));
  await say('work', '@Andy standup?');
  await eventually('work answered', () => texts('work').includes('answered as work'));
  await running.whenIdle();
  // Each answer went out through its own number only.
  expect(texts('home')).toEqual(['answered as home']);
  expect(texts('work')).toEqual(['answered as work']);
  // The group rows carry the account: what `carapace chats`, `groups` and the console show.
  expect(running.store.groups.get('work')?.channel).toBe('whatsapp.work');

  // An approval asked by the work account's group reaches the owner's self-chat on both numbers…
  await say('work', '@Andy do the risky thing');
  const ask = await eventually('the request stored', () =>
    running.store.approvals.listPending().find((a) => a.groupId === 'work'),
  );
  for (const name of ACCOUNTS)
    await eventually(`the request in ${name}'s self-chat`, () =>
      server[name].sentTexts().find((x) => x.to === FAKE_SELF_JID && x.text.includes(ask.id)),
    );
  // …and is decided by the owner in the home number's "Message yourself" chat (crabline refuses the linked
  // account's own messages on the wire, so it arrives as Baileys' own upsert, as in the e2e suite).
  const homeSocket = seam.home.socket();
  if (!homeSocket) throw new Error('no home socket');
  homeSocket.ev.emit('messages.upsert', {
    type: 'notify',
    messages: [
      waMessage({
        id: 'OWNER1',
        remoteJid: FAKE_SELF_LID,
        remoteJidAlt: FAKE_SELF_JID,
        fromMe: true,
        text: `approve ${ask.id}`,
      }),
    ],
  });
  await eventually('executed once', () => executed.length === 1);
  expect(running.store.approvals.get(ask.id)).toMatchObject({
    status: 'executed',
    decidedBy: expect.stringMatching(/^whatsapp\.home:/),
  });
  await eventually('the work group told through its own number', () =>
    texts('work').includes('executed for work'),
  );
  expect(texts('home')).not.toContain('executed for work');

  // The work account's table removed: a reload stops that number and no other.
  const files = createConfigFileStore({ configFile: paths.configFile });
  files.write(configText({ home: server.home.url }), files.read().hash);
  expect(await client.reloadConfig()).toMatchObject({
    kind: 'applied',
    ok: true,
    detail: 'applied to the running host, no restart needed',
  });
  await eventually('the work account gone from status', async () => !(await status()).has('whatsapp.work'));
  await running.whenIdle();
  const workSent = texts('work').length;
  await say('home', '@Andy still there?');
  await eventually('the home number answers again', () => texts('home').length === 2);
  await say('work', '@Andy anyone?');
  await running.whenIdle();
  expect((await status()).get('whatsapp.home')?.state).toBe('connected');
  // The stopped number stored nothing more and sent nothing more.
  expect(texts('work')).toHaveLength(workSent);
  const workMessages = running.store.db
    .prepare("SELECT count(*) AS n FROM messages WHERE channel = 'whatsapp.work' AND text LIKE '%anyone%'")
    .get() as { n: number };
  expect(workMessages.n).toBe(0);
}, 90_000);

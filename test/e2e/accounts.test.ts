/**
 * Accounts end to end, through real agent containers: one host with two Telegram bots
 * (`[channels.telegram.family]`, `[channels.telegram.work]`, each the real grammY client against its own
 * fake Bot API) and two WhatsApp numbers (`[channels.whatsapp.home]`, `[channels.whatsapp.work]`, each a
 * real Baileys socket against its own crabline server), every account made from config.toml by the host.
 * Both bots sit in one Telegram chat and both numbers in one WhatsApp group, so the chat id alone would
 * collide: each account's group is its own and is answered through its own bot or number, never another.
 * An approval asked by a run of the work number's group is decided by the owner's press in the family
 * bot's private chat, and the command runs once. Removing the work bot's table at a reload stops that bot
 * alone (its Bot API sees no call after), while the other three accounts keep answering.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { parse, stringify } from 'smol-toml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { WAITING_FOR_OWNER_LINE } from '../../host/admin/waiting-line.ts';
import { createLocalClient } from '../../host/channels/local/local-client.ts';
import { createConfigFileStore } from '../../host/config/config-file-store.ts';
import { turnResponder } from '../fakes/e2e-responders.ts';
import { reply } from '../fakes/fake-provider-script.ts';
import { startFakeTelegram, type FakeTelegram } from '../fakes/fake-telegram-api.ts';
import {
  auditMark,
  auditSince,
  bash,
  nextApproval,
  runTools,
  securityResponder,
} from '../fakes/security-responders.ts';
import {
  FAKE_SELF_JID,
  groupSendsAtSeam,
  startFakeWhatsApp,
  type FakeWhatsApp,
} from '../fakes/whatsapp-fake.ts';
import {
  botTokens,
  channelStatuses,
  seamedDefinitions,
  telegramAccountTables,
  whatsappAccountTables,
  type WhatsAppSeam,
} from '../helpers/account-channels.ts';
import { describeDocker } from '../helpers/docker-available.ts';
import { makeTempDir } from '../helpers/temp-dir.ts';
import { eventually, startE2eHost, type E2eHost } from './e2e-harness.ts';

const OWNER = 9101;
const MEMBER = { id: 9102, first_name: 'Mia' };
/** One Telegram chat both bots were added to. */
const TG_CHAT = { id: -1009101, type: 'supergroup' as const, title: 'Both bots' };
/** One WhatsApp group both numbers are members of. */
const WA_CHAT = '120363000000000091@g.us';
const ALICE = '15551234567@s.whatsapp.net';
const NUMBERS = ['home', 'work'] as const;
type WaNumber = (typeof NUMBERS)[number];
/** Each account's group: its id, its channel label and the chat it sits in. */
const GROUPS = [
  ['fam', 'telegram.family', String(TG_CHAT.id)],
  ['wrk', 'telegram.work', String(TG_CHAT.id)],
  ['home', 'whatsapp.home', WA_CHAT],
  ['office', 'whatsapp.work', WA_CHAT],
] as const;
type GroupId = (typeof GROUPS)[number][0];
const GROUP_IDS = GROUPS.map(([id]) => id);

const answering = turnResponder((turn) => reply.text(`answered as ${turn.group}`));

await describeDocker('e2e: two Telegram bots and two WhatsApp numbers on one host (real containers)', () => {
  let dir: string;
  let h: E2eHost;
  const bots = {} as Record<'family' | 'work', FakeTelegram>;
  const servers = {} as Record<WaNumber, FakeWhatsApp>;
  const seams = {} as Record<WaNumber, WhatsAppSeam>;
  let status: ReturnType<typeof channelStatuses>;
  let seq = 0;

  /** What a bot said in the shared chat: the host's line while a run waits for the owner is not an answer. */
  const tgAnswers = (bot: FakeTelegram) =>
    bot
      .sent()
      .filter((s) => s.chat_id === TG_CHAT.id && s.text !== WAITING_FOR_OWNER_LINE)
      .map((s) => s.text);
  /** What a number said in the shared group, read at its seam (the waiting line left out). */
  const waAnswers = (name: WaNumber) =>
    seams[name].sent
      .filter((s) => s.chatId === WA_CHAT && s.text !== WAITING_FOR_OWNER_LINE)
      .map((s) => s.text);
  const waSay = (name: WaNumber, text: string) =>
    servers[name].inject({
      chatJid: WA_CHAT,
      senderJid: ALICE,
      pushName: 'Alice',
      text,
      messageId: `ACC${(seq += 1)}`,
    });
  const tgSay = (bot: FakeTelegram, text: string) => bot.message({ chat: TG_CHAT, from: MEMBER, text });
  /** Each group's member writes in it, through the group's own bot or number. */
  const say: Record<GroupId, (text: string) => unknown> = {
    fam: (text) => tgSay(bots.family, text),
    wrk: (text) => tgSay(bots.work, text),
    home: (text) => waSay('home', text),
    office: (text) => waSay('work', text),
  };
  /** What each group was answered through its own account. */
  const answersIn: Record<GroupId, () => string[]> = {
    fam: () => tgAnswers(bots.family),
    wrk: () => tgAnswers(bots.work),
    home: () => waAnswers('home'),
    office: () => waAnswers('work'),
  };
  const answerCounts = () =>
    Object.fromEntries(GROUP_IDS.map((id) => [id, answersIn[id]().length])) as Record<GroupId, number>;
  /**
   * Writes `text` in each of `groups`, waits until each of `answering` was answered, and returns what every
   * group was answered since, once the host is idle: an answer in the wrong place shows up there.
   */
  const askAndWait = async (
    groups: readonly GroupId[],
    answeringGroups: readonly GroupId[],
    text: string,
  ) => {
    const before = answerCounts();
    for (const id of groups) await say[id](text);
    await eventually(
      `${answeringGroups.join(', ')} answered`,
      () => answeringGroups.every((id) => answersIn[id]().length > before[id]),
      180_000,
    );
    await h.host.whenIdle();
    return Object.fromEntries(GROUP_IDS.map((id) => [id, answersIn[id]().slice(before[id])]));
  };

  beforeAll(async () => {
    dir = makeTempDir('carapace-accounts-e2e-');
    bots.family = await startFakeTelegram({ token: '111:family', botId: 111, username: 'family_bot' });
    bots.work = await startFakeTelegram({ token: '222:work', botId: 222, username: 'work_bot' });
    for (const name of NUMBERS) {
      const own = path.join(dir, `crabline-${name}`);
      fs.mkdirSync(own);
      servers[name] = await startFakeWhatsApp(own);
      seams[name] = groupSendsAtSeam();
    }
    h = await startE2eHost({
      config: {
        channels: {
          telegram: telegramAccountTables(bots, OWNER),
          whatsapp: whatsappAccountTables({ home: servers.home.url, work: servers.work.url }),
        },
        runs: { max_attempts: 1 },
      },
      secrets: botTokens(bots),
      responder: answering,
      channelDefinitions: (paths) => seamedDefinitions(paths, seams),
    });
    status = channelStatuses(h.paths.socketFile);
    await eventually('all four accounts connected', async () => {
      const s = await status();
      return GROUPS.every(([, label]) => s.get(label)?.state === 'connected');
    });
    for (const [id, label, chat] of GROUPS) {
      const res = await h.cli(['groups', 'add', id, '--channel', label, '--chat', chat]);
      expect(res.code, res.stderr).toBe(0);
    }
    // The owner's private chat with each bot becomes an admin chat; each number's self-chat already is one.
    await bots.family.linkOwner(OWNER);
    await bots.work.linkOwner(OWNER);
  }, 240_000);
  afterAll(async () => {
    await h?.stop();
    for (const bot of Object.values(bots)) await bot.close();
    for (const server of Object.values(servers)) await server.close().catch(() => undefined);
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  }, 60_000);

  it("answers each account's group through its own bot or number and never another", async () => {
    expect(await askAndWait(GROUP_IDS, GROUP_IDS, '@Andy are you there?')).toEqual({
      fam: ['answered as fam'],
      wrk: ['answered as wrk'],
      home: ['answered as home'],
      office: ['answered as office'],
    });
    // Each answer came from a run in a container of its own group.
    for (const [id] of GROUPS) expect(h.started(id).length, id).toBeGreaterThanOrEqual(1);
    // The groups carry their account: what `carapace chats`, `groups` and the console show.
    const chats = await h.cli(['groups', 'list']);
    expect(chats.code, chats.stderr).toBe(0);
    for (const [id, label, chat] of GROUPS) expect(chats.stdout).toContain(`${id}\t${label}:${chat}\t`);
  }, 240_000);

  it("decides an approval asked by the work number's run from the owner's chat with the family bot; it runs once", async () => {
    const file = `FLAGGED-acc-${crypto.randomBytes(3).toString('hex')}`;
    h.fake.setResponder(
      securityResponder({ office: runTools([bash(`touch ${file} && mkfifo fifo-${file}`)]) }),
    );
    const mark = auditMark(h);
    const before = answerCounts();
    const homeSends = seams.home.sent.length;
    await say.office('@Andy run the flagged command');
    const ask = await nextApproval(h, new Set(), file, 90_000);
    // The owner is asked on every account: both bots' private chats and both numbers' self-chats.
    const requests = {} as Record<'family' | 'work', ReturnType<FakeTelegram['sent']>[number]>;
    for (const name of ['family', 'work'] as const)
      requests[name] = await eventually(`the request with buttons in the ${name} bot's owner chat`, () =>
        bots[name].sent().find((s) => s.chat_id === OWNER && s.text.includes(ask.id) && s.reply_markup),
      );
    for (const name of NUMBERS)
      await eventually(`the request in the ${name} number's self-chat`, () =>
        servers[name].sentTexts().find((x) => x.to === FAKE_SELF_JID && x.text.includes(ask.id)),
      );
    const press = (name: 'family' | 'work', id: string) =>
      bots[name].push({
        callback_query: {
          id,
          from: { id: OWNER, is_bot: false, first_name: 'Owner' },
          chat_instance: `c-${name}`,
          data: `approve ${ask.id}`,
          message: {
            message_id: requests[name].message_id,
            date: 1,
            chat: { id: OWNER, type: 'private' },
            text: requests[name].text,
          },
        },
      });
    // Decided on the family bot; the same press on the work bot afterwards decides nothing more.
    press('family', 'cb-family');
    await eventually(
      'the command executed',
      () => h.host.store.approvals.get(ask.id)?.status === 'executed',
      60_000,
    );
    press('work', 'cb-work');
    const answer = await eventually(
      "the work number's group answered",
      () => answersIn.office().slice(before.office)[0],
      90_000,
    );
    expect(h.host.store.approvals.get(ask.id)?.decidedBy).toMatch(/^telegram\.family:/);
    expect(fs.existsSync(path.join(h.paths.groupsDir, 'office', file))).toBe(true);
    // mkfifo fails on a second run: the answer shows the command ran once, as the audit does.
    expect(answer).not.toMatch(/File exists/);
    await eventually('the second press answered', () =>
      bots.work.calls.find(
        (c) => c.method === 'answerCallbackQuery' && c.params.callback_query_id === 'cb-work',
      ),
    );
    const toasts = [...bots.family.calls, ...bots.work.calls]
      .filter((c) => c.method === 'answerCallbackQuery')
      .map((c) => [c.params.callback_query_id, c.params.text]);
    expect(toasts).toEqual([
      ['cb-family', 'Approved'],
      ['cb-work', 'Already decided'],
    ]);
    await h.host.whenIdle();
    const decisions = auditSince(h, mark)
      .filter((r) => r.operation === 'bash')
      .map((r) => r.decision);
    expect(decisions.filter((d) => d === 'approval-executed')).toHaveLength(1);
    // The run's words went out through the work number only.
    expect(answerCounts()).toEqual({ ...before, office: before.office + 1 });
    expect(seams.home.sent.slice(homeSends)).toEqual([]);
    h.fake.setResponder(answering);
  }, 240_000);

  it('stops only the work bot when its table leaves config.toml at a reload; the other three answer on', async () => {
    const files = createConfigFileStore({ configFile: h.paths.configFile });
    const current = files.read();
    const edited = parse(current.text) as { channels: { telegram: Record<string, unknown> } };
    delete edited.channels.telegram.work;
    files.write(stringify(edited), current.hash);
    // Through the socket as `carapace config set` does, or the file watch just before it: either way applied.
    const reload = await createLocalClient(h.paths.socketFile).reloadConfig();
    expect(reload.ok, reload.detail).toBe(true);
    expect(reload.detail).toMatch(/applied to the running host, no restart needed|already runs this version/);
    await eventually('the work bot gone from status', async () => !(await status()).has('telegram.work'));
    // It left status only once its stop returned (its long poll ended): no call of it can come after.
    const workCalls = bots.work.calls.length;
    // The removed bot's member writes too: the other three answer, and nothing reads or answers it.
    expect(await askAndWait(GROUP_IDS, ['fam', 'home', 'office'], '@Andy still there?')).toEqual({
      fam: ['answered as fam'],
      wrk: [],
      home: ['answered as home'],
      office: ['answered as office'],
    });
    // The removed bot was not polled nor sent through again: its member's message waits unread.
    expect(bots.work.calls.length).toBe(workCalls);
    const s = await status();
    for (const label of ['telegram.family', 'whatsapp.home', 'whatsapp.work'])
      expect(s.get(label)?.state, label).toBe('connected');
  }, 240_000);
});

import type { Logger } from '../../logging/logger.ts';
import type { HostEvents } from '../../store/host-events.ts';
import { GROUP_ID_PATTERN, type GroupsStore } from '../../store/groups-store.ts';
import type { OutboxItem, OutboxStore } from '../../store/outbox-store.ts';
import type { Channel, ChannelHost, ChannelStatus } from '../channel.ts';
import { consoleLine } from './console-line.ts';
import { LOCAL_TEXT_LIMIT } from './local-definition.ts';
import { LOCAL_CHANNEL } from './local-names.ts';
import {
  type ConsoleEvent,
  type PostMessageBody,
  type PostMessageResult,
  postMessageBody,
} from './local-api.ts';
import { BadRequest, readJsonBody, sendJson, type RouteHandler } from './socket-server.ts';
import { describeZodIssues } from '../../../container-agent/src/rpc/zod-issues.ts';
import { errorMessage } from '../../errors/error-message.ts';

export { LOCAL_CHANNEL };

export interface LocalChannelDeps {
  groups: GroupsStore;
  outbox: OutboxStore;
  events: HostEvents;
  isBusy(groupId: string): boolean;
  /** The group's latest messages refused at its spend cap (the router's record), if any. */
  capRefusal(groupId: string): { after: number; through: number; reason: string } | undefined;
  ownerName: string;
  logger: Logger;
}

/**
 * The local console: the owner talks to groups of channel "local" through the host's socket. Delivery
 * is the outbox itself: a reply is shown to connected clients once it is marked sent, and a client that
 * reconnects replays everything after the last outbox id it saw, so nothing is lost or shown twice.
 */
export function createLocalChannel({
  groups,
  outbox,
  events,
  isBusy,
  capRefusal,
  ownerName,
  logger,
}: LocalChannelDeps) {
  let host: ChannelHost | undefined;
  let status: ChannelStatus = {
    state: 'stopped',
    reason: 'not started yet',
    since: new Date().toISOString(),
  };
  const subscribers = new Map<string, Set<(e: ConsoleEvent) => void>>();

  const stateOf = (groupId: string): ConsoleEvent | undefined => {
    const g = groups.get(groupId);
    if (!g || g.channel !== LOCAL_CHANNEL) return undefined;
    const refused = capRefusal(groupId);
    return {
      type: 'state',
      groupId,
      cursor: g.agentCursor,
      pendingOutbox: outbox.pendingCount(LOCAL_CHANNEL, g.chatId),
      busy: isBusy(groupId),
      lastOutboxId: outbox.highWater(LOCAL_CHANNEL, g.chatId),
      ...(refused ? { capRefusal: refused } : {}),
    };
  };
  const publish = (chatId: string, e: ConsoleEvent | undefined) => {
    if (e) for (const fn of subscribers.get(chatId) ?? []) fn(e);
  };
  const onDelivered = (item: OutboxItem) => {
    if (item.channel !== LOCAL_CHANNEL) return;
    publish(item.chatId, {
      type: 'reply',
      outboxId: item.id,
      key: item.idempotencyKey,
      text: consoleLine(item),
    });
    if (item.groupId) publish(item.chatId, stateOf(item.groupId));
  };
  const onGroupState = (groupId: string) => {
    const g = groups.get(groupId);
    if (g?.channel === LOCAL_CHANNEL) publish(g.chatId, stateOf(groupId));
  };

  const localGroup = (id: string) => {
    const g = groups.get(id);
    if (!g || g.channel !== LOCAL_CHANNEL) {
      // Only a name groups add would take is offered as one to add.
      throw new NotFound(
        GROUP_ID_PATTERN.test(id)
          ? `there is no local group "${id}"; add one with: carapace groups add ${id} --channel local`
          : `there is no local group "${id}": group ids are 1-64 lowercase letters, digits, "-" or "_", e.g. "family" (carapace groups list shows them)`,
      );
    }
    return g;
  };

  /**
   * The owner's own words into a local group: what `carapace send` and `carapace chat` post on the socket,
   * and what the web console's message box sends. One path, so both are stored, triggered and answered
   * alike (and an owner command in them gets the host's answer).
   */
  const ownerMessage = (m: PostMessageBody): OwnerMessageOutcome => {
    let group;
    try {
      group = localGroup(m.group);
    } catch (err) {
      return { ok: false, status: 404, error: errorMessage(err) };
    }
    if (!host) return { ok: false, status: 503, error: 'the host is starting; try again in a moment' };
    const after = outbox.highWater(LOCAL_CHANNEL, group.chatId);
    const result = host.ingest({
      channel: LOCAL_CHANNEL,
      chatId: group.chatId,
      chatTitle: group.name,
      externalId: m.clientMessageId,
      senderId: 'owner',
      senderName: ownerName,
      text: m.text,
      sentAt: new Date().toISOString(),
      mentionsBot: false,
      repliesToBot: false,
      // Only the owner can open the host's socket (0600 in a 0700 folder) or hold a web console session,
      // so every console message is theirs.
      fromOwner: true,
      // Typed at the console by the owner: there is nothing to forward or quote.
      origin: { kind: 'own' },
    });
    return {
      ok: true,
      groupId: group.id,
      messageId: result.messageId ?? null,
      triggered: result.triggered,
      duplicate: result.duplicate,
      after,
      commandReplyKey: result.commandReplyKey ?? null,
    };
  };

  const adminGroup = () => groups.list().find((g) => g.isAdmin && g.channel === LOCAL_CHANNEL);
  /** The console's admin group as the web console's message box reaches it: `carapace send <admin>`. */
  const adminConversation: AdminConversation = {
    groupId: () => adminGroup()?.id,
    send(text, clientMessageId) {
      const admin = adminGroup();
      if (!admin) return { ok: false, status: 404, error: 'the local console has no admin group' };
      return ownerMessage({ group: admin.id, text, clientMessageId });
    },
    repliesAfter(outboxId, limit) {
      const admin = adminGroup();
      if (!admin) return [];
      return outbox
        .sentAfter(LOCAL_CHANNEL, admin.chatId, outboxId)
        .slice(0, limit)
        .map((item) => ({ id: item.id, text: consoleLine(item) }));
    },
  };

  const postMessage: RouteHandler = async (req, res) => {
    const parsed = postMessageBody.safeParse(await readJsonBody(req));
    if (!parsed.success) throw new BadRequest(describeZodIssues(parsed.error));
    const outcome = ownerMessage(parsed.data);
    if (!outcome.ok) return sendJson(res, outcome.status, { error: outcome.error });
    const { ok: _ok, ...result } = outcome;
    sendJson(res, 200, result);
  };

  const streamEvents: RouteHandler = (req, res, url) => {
    let group;
    try {
      group = localGroup(url.searchParams.get('group') ?? '');
    } catch (err) {
      return sendJson(res, 404, { error: errorMessage(err) });
    }
    // "latest" skips the history: the client only wants what is delivered from now on.
    const afterParam = url.searchParams.get('after') ?? '0';
    const after =
      afterParam === 'latest' ? outbox.highWater(LOCAL_CHANNEL, group.chatId) : Number(afterParam);
    if (!Number.isSafeInteger(after) || after < 0) {
      return sendJson(res, 400, { error: 'after must be a whole number or "latest"' });
    }
    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-store' });
    const write = (e: ConsoleEvent) => res.write(`${JSON.stringify(e)}\n`);
    // Subscribe before replaying so that nothing delivered in between is missed (duplicates are
    // harmless: clients drop keys they have seen).
    const set = subscribers.get(group.chatId) ?? subscribers.set(group.chatId, new Set()).get(group.chatId);
    set?.add(write);
    for (const item of outbox.sentAfter(LOCAL_CHANNEL, group.chatId, after)) {
      write({ type: 'reply', outboxId: item.id, key: item.idempotencyKey, text: consoleLine(item) });
    }
    const state = stateOf(group.id);
    if (state) write(state);
    const cleanup = () => set?.delete(write);
    req.on('close', cleanup);
    res.on('close', cleanup);
  };

  const channel: Channel = {
    name: LOCAL_CHANNEL,
    textLimit: LOCAL_TEXT_LIMIT,
    async start(h: ChannelHost) {
      host = h;
      events.on('outbox-delivered', onDelivered);
      events.on('group-state', onGroupState);
      setStatus('connected');
    },
    async stop() {
      host = undefined;
      events.off('outbox-delivered', onDelivered);
      events.off('group-state', onGroupState);
      subscribers.clear();
      setStatus('stopped', 'the host stopped');
    },
    status: () => status,
    async send(piece) {
      // Nothing to hand over: the outbox row is the console's copy, published once it is marked sent.
      if (!groups.findByChat(LOCAL_CHANNEL, piece.chatId)) {
        return {
          kind: 'permanent',
          reason: `there is no local chat "${piece.chatId}" (its group was removed)`,
        };
      }
      return { kind: 'delivered', platformIds: [piece.idempotencyKey] };
    },
    async setTyping() {},
    adminChatId: () => groups.list().find((g) => g.isAdmin && g.channel === LOCAL_CHANNEL)?.chatId,
  };
  function setStatus(state: ChannelStatus['state'], reason?: string) {
    status = { state, ...(reason ? { reason } : {}), since: new Date().toISOString() };
    host?.onStatus(status);
  }

  logger.debug({}, 'local console channel ready');
  return {
    channel,
    adminConversation,
    routes: { 'POST /v1/messages': postMessage, 'GET /v1/events': streamEvents } as Record<
      string,
      RouteHandler
    >,
  };
}

class NotFound extends Error {}

/** The owner's message was stored (and maybe answered), or why not: the socket's status code and reason. */
export type OwnerMessageOutcome =
  ({ ok: true } & PostMessageResult) | { ok: false; status: 404 | 503; error: string };

/** The local admin group, for a sender other than the socket (the web console's message box). */
export interface AdminConversation {
  groupId(): string | undefined;
  /** The owner's words, through the socket's own path (`ownerMessage`). */
  send(text: string, clientMessageId: string): OwnerMessageOutcome;
  /** What the host delivered to the admin chat after an outbox id (the `after` a send answered), oldest first. */
  repliesAfter(outboxId: number, limit: number): { id: number; text: string }[];
}

// The channel contract (v2). An adapter only translates: platform event → InboundMessage; outbox piece →
// platform send → typed outcome. Trigger rules, owner checks, chunking, retries, dead letters and admin
// routing live once in the host. Adapters never throw for connection trouble: they report status.
//
// How the host drives it (adapters may rely on this):
// - `start` is called once, after the host holds its data folder and before any outbox delivery; `stop` is
//   called on shutdown and on a failed start (even when `start` rejected), so it must tolerate both.
// - The outbox delivers one piece at a time per chat, in order, and never sends a later piece of a chat
//   before an earlier one was delivered or dead-lettered. A piece is retried with the same idempotencyKey
//   after `retry` (and after a host crash between send and the record of it), so `send` may see a key twice.
// - `send` rejecting counts as `retry` (a bug in the adapter must not lose a reply), logged as an error.
// - `connection-lost`: a `retry` that is also counted on the piece; at `[outbox] max_connection_drops` the
//   piece is dead-lettered (owner told once, naming the group and the reply's first words) and the chat's
//   next pieces go on. Only an adapter that saw its connection close during the send answers it.
// - `permanent`: the piece is dead-lettered (kept in the outbox with status `dead` and the reason, shown by
//   `carapace doctor`), the owner is told once per chat, and the chat's next pieces are still attempted.
// - `moved`: in one transaction the group is re-bound to newChatId and every pending piece of the old chat
//   follows it; audited (operation `channel.chat_moved`). The same piece is then sent again to newChatId.
// - A piece for a channel that is not configured (no adapter under that name) is `permanent` at once.
// - `platformIds` of a delivered piece are stored with its outbox row; `isOwnMessage` answers from them,
//   and `retractActions` is handed the last of them (the message that carries the piece's buttons).
// - `InboundSink` is synchronous and never throws for a message it does not want: unregistered chats,
//   duplicates and ignored commands come back as `stored: false`.

import type { z } from 'zod';
import type { Logger } from '../logging/logger.ts';
import type { Clock } from '../time/clock.ts';

/**
 * Who wrote a message's content, as the platform says (never read from the text), whatever its kind (text,
 * caption, location, contact, poll, file). Who sent a message is not who wrote it: a forward carries
 * someone else's words in the sender's hand (so does an inline bot's answer on Telegram). `authorIsOwner`
 * is attested like `fromOwner`, from platform facts only (Telegram: the forward's origin is the owner's user
 * id); where the platform does not say who wrote it (a WhatsApp forward), it is false.
 */
export type MessageOrigin = { kind: 'own' } | { kind: 'forwarded'; author: string; authorIsOwner: boolean };

/**
 * Someone's words the sender quoted and the adapter includes for context (Telegram: the quoted part of a
 * replied-to or external message; WhatsApp: the quoted message). A quote of the bot's own message is not
 * included (it is the agent's own reply). The author is the quoted message's origin's, as in MessageOrigin:
 * a quote of a forward is the forward's author's, and a quote whose origin the platform does not show
 * (another chat's message, a WhatsApp quote without its context) is not the owner's.
 */
export interface QuotedContent {
  text: string;
  author: string;
  authorIsOwner: boolean;
}

/** A message as a channel adapter hands it to the host, already normalized. */
export interface InboundMessage {
  channel: string;
  /**
   * The conversation. Telegram forum topics are conversations of their own: `<chat id>/<thread id>`
   * (the General topic is the plain chat id). WhatsApp: the chat JID (`…@g.us`, or the self-chat's JID).
   */
  chatId: string;
  /** The chat's title as the platform shows it (group name; "Group › Topic"); remembered for `carapace chats`. */
  chatTitle?: string;
  /** The platform's id of the message; with channel and chat it identifies the message (duplicates dropped). */
  externalId: string;
  senderId: string;
  senderName: string;
  /** Text; with `media`, the caption (maybe empty): the host writes the file's line. Else a placeholder (`[sticker]`, `[location]`). */
  text: string;
  sentAt: string;
  /** From platform metadata: an @-mention entity of the bot (Telegram), a mentionedJid of the bot (WhatsApp). */
  mentionsBot: boolean;
  /** A reply to one of the bot's own messages (Telegram: reply_to_message.from is the bot; WhatsApp: quoted id was sent by us). */
  repliesToBot: boolean;
  /**
   * The owner writing in their admin chat on this channel, attested by the adapter from platform facts
   * only, never from message content: the console always; WhatsApp: the linked account writing in its own
   * self-chat; Telegram: `from.id == owner_user_id` in the bot's private chat. Such a message joins the one
   * admin group (its replies go back to the chat it came from); admin commands and approvals are decided
   * from this flag alone. The owner's messages in ordinary groups are NOT fromOwner: they are a member's.
   */
  fromOwner: boolean;
  /**
   * The sender is the owner's own account, in any chat (host refinement, optional): attested like
   * `fromOwner`, from platform facts only. It only lets the owner trigger groups set to
   * `trigger = "owner"`; it never makes a message an admin message, a command or an approval.
   */
  senderIsOwner?: boolean;
  /**
   * Who wrote `text`. The host treats words the sender did not write as their author's: fenced as
   * untrusted and corrupting the run unless the author is the owner, and never an admin command or an
   * approval, whoever forwarded them.
   */
  origin: MessageOrigin;
  /** Quoted words of someone else, handled like a forward's (see QuotedContent). */
  quoted?: QuotedContent;
  /**
   * A file the message carries (voice note, photo, document…), as the platform declares it. Declared facts
   * are claims: the host downloads within its caps and decides the real type from the bytes. A message
   * with media goes through `ChannelHost.ingestMedia`, never `ingest`.
   */
  media?: InboundMedia;
}

/** What kind of file the platform says a message carries. */
export type MediaKind =
  'voice' | 'audio' | 'photo' | 'document' | 'video' | 'video_note' | 'sticker' | 'animation';

/** Raised by `InboundMedia.download` when the file is larger than the limit it was given. */
export class MediaTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`the file is larger than ${limitBytes} bytes`);
  }
}

export interface InboundMedia {
  kind: MediaKind;
  /** The file name the sender gave (documents); a claim, never a path. */
  fileName?: string;
  /** The MIME type the platform declares; a claim. */
  declaredMime?: string;
  /** The size the platform declares, when it does; a claim (the download is still cut at the limit). */
  declaredBytes?: number;
  /** Seconds, for voice, audio and video. */
  durationSec?: number;
  /**
   * Fetches the bytes, at most `maxBytes` of them: rejects with MediaTooLargeError past it, and with any
   * other error when the platform could not deliver the whole file (a cut connection, a missing file).
   */
  download(maxBytes: number, signal: AbortSignal): Promise<Uint8Array>;
}

export interface InboundResult {
  /** False when the chat is not a registered group (or an admin chat) or the message was a duplicate. */
  stored: boolean;
  duplicate: boolean;
  triggered: boolean;
  messageId?: number;
  groupId?: string;
  /** Set when the message was an owner command (approve, deny, pending): the key of the host's answer. */
  commandReplyKey?: string;
  /** What an approve or deny did, in a word or two ("Approved", "Already decided"): a button press's toast. */
  commandBrief?: string;
}

/** Called by adapters for every inbound message; synchronous: the message is stored when it returns. */
export type InboundSink = (m: InboundMessage) => InboundResult;

/** One piece of a reply, already chunked to the channel's textLimit by the host. */
export interface OutboundPiece {
  chatId: string;
  text: string;
  /**
   * The outbox's key, stable across retries of this piece. It repeats across installs and after a restore
   * (`run:1:1` in every fresh database): never derive a platform id from it, use `sendKey`.
   */
  idempotencyKey: string;
  /**
   * Stable across retries of this piece and unique to this install (derived from the database's random
   * secret, which a restore renews): a channel where the host picks the platform's message id (WhatsApp)
   * derives it from this, so a re-send keeps its id and no two installs, or states of one, share one.
   */
  sendKey: string;
  /**
   * Buttons the owner may press where the platform has them (Telegram inline keyboard on approval requests).
   * Pressing one must arrive as an InboundMessage with `text = command` from the presser, so the host's one
   * owner check decides; the text commands work everywhere regardless.
   */
  actions?: { label: string; command: string }[];
  /** A file to send with this piece (its text is then the caption, maybe empty). */
  attachment?: OutboundAttachment;
}

/**
 * A file a reply sends: a host-only copy made when the message was approved (the container cannot change
 * it afterwards), its name and type as sniffed from the bytes, and how the platform should show it.
 */
export interface OutboundAttachment {
  path: string;
  fileName: string;
  mime: string;
  kind: 'photo' | 'voice' | 'document';
}

/** What became of one send. Adapters map platform errors onto these; they never throw for platform errors. */
export type SendOutcome =
  | { kind: 'delivered'; platformIds: string[] }
  /** Transient (network, 5xx, rate limit, socket reconnecting): the host retries with backoff. */
  | { kind: 'retry'; reason: string; retryAfterMs?: number }
  /**
   * The send failed and took the connection down with it (the server closed the socket on this message):
   * retried like `retry`, but counted per piece; after `[outbox] max_connection_drops` of them the piece
   * is dead-lettered and the owner told, so one message cannot keep cutting every chat off.
   */
  | { kind: 'connection-lost'; reason: string }
  /** Chat gone, bot removed or blocked, no such chat: dead-lettered, the owner told once, others unaffected. */
  | { kind: 'permanent'; reason: string }
  /** Telegram group upgraded to a supergroup: the host re-binds the group to newChatId and sends there. */
  | { kind: 'moved'; newChatId: string; reason: string };

export type ChannelState = 'connected' | 'connecting' | 'needs-login' | 'logged-out' | 'stopped';

export interface ChannelStatus {
  state: ChannelState;
  /** Plain words for the owner, with the fix where there is one ("run carapace whatsapp login"). */
  reason?: string;
  since: string;
}

/** What the host gives a channel when it starts it. */
export interface ChannelHost {
  ingest: InboundSink;
  /**
   * A message with media: the host downloads, checks and stores the file (or writes a placeholder for it),
   * then ingests the message as `ingest` does. Never rejects. Adapters await it on the chat's lane, so a
   * chat's messages stay in order.
   */
  ingestMedia(m: InboundMessage & { media: InboundMedia }): Promise<InboundResult>;
  /** The channel's state changed; the host shows it in status/doctor and announces losses in other admin chats. */
  onStatus(status: ChannelStatus): void;
  /** A chat the bot is in or was written from, registered or not: id and title only, never content. */
  onChatSeen(chat: { chatId: string; title: string }): void;
  /** Whether the host sent this platform message id in this chat (replies to the bot, echo suppression). */
  isOwnMessage(chatId: string, platformId: string): boolean;
  /**
   * The platform itself said a chat moved (Telegram's migrate_to_chat_id service message): the host
   * re-binds the chat's group at once, so what people write at the new id is the group's before any reply
   * has gone there. A send that answers `moved` does the same from the outbox.
   */
  onChatMoved(fromChatId: string, toChatId: string, reason: string): void;
}

export interface Channel {
  readonly name: string;
  /** Longest text one platform message may carry; the host chunks replies to it at enqueue time. */
  readonly textLimit: number;
  /** Starts receiving. Resolves once started (not necessarily connected); connection trouble goes to onStatus. */
  start(host: ChannelHost): Promise<void>;
  /** Stops receiving and sending; leaves no timer, socket or poller behind. */
  stop(): Promise<void>;
  status(): ChannelStatus;
  send(piece: OutboundPiece): Promise<SendOutcome>;
  /**
   * Typing/composing indicator: `true` shows it once (the platform keeps it a few seconds), `false` takes
   * it off where the platform can. Best effort, never throws. The host calls it while a run is active,
   * repeating `true` every `typingRenewMs`, so it holds through tool calls and waits for the owner.
   */
  setTyping(chatId: string, on: boolean): Promise<void>;
  /**
   * How often `setTyping(chatId, true)` must be repeated for the indicator to stay on: the platform's
   * expiry less a margin. Present exactly when the definition's `typing` capability is true.
   */
  readonly typingRenewMs?: number;
  /**
   * Acknowledges a message that triggered a run (a reaction on it), so people see at once that the
   * assistant was addressed. Present exactly when the definition's `reactions` capability is true; does
   * nothing when the channel's config turned acknowledgements off. Best effort, never throws.
   */
  acknowledge?(target: AcknowledgeTarget): Promise<void>;
  /**
   * Takes a delivered message of the host's back (deletes it for everyone): a line that stopped being true,
   * such as "waiting for the owner's OK" once the owner answered. Present exactly when the definition's
   * `unsend` capability is true. Best effort: resolves `false` when the platform refused (logged), never
   * throws; a message already gone counts as taken back.
   */
  unsend?(target: { chatId: string; platformId: string }): Promise<boolean>;
  /**
   * Replaces the text of a delivered message of the host's (a streamed draft growing into the answer).
   * Present exactly when the definition's `edits` capability is true. Best effort: resolves `false` when
   * the platform refused (logged), never throws; an edit to the text the message already shows is `true`.
   * The caller keeps within the platform's edit rate (host/router/draft-stream.ts).
   */
  editText?(target: { chatId: string; platformId: string; text: string }): Promise<boolean>;
  /** The owner's admin chat on this channel once known (Telegram: the owner's private chat id; WhatsApp: self-chat JID). */
  adminChatId(): string | undefined;
  /**
   * Takes the buttons off a delivered piece whose `actions` no longer apply (an approval decided elsewhere,
   * or expired), so nobody presses a dead one. Present exactly when the definition's `retractActions`
   * capability is true. Best effort: resolves `false` when the platform refused (logged), never throws; a
   * second call for the same message is harmless and sends nothing.
   */
  retractActions?(target: { chatId: string; platformId: string }): Promise<boolean>;
}

/** The message an acknowledgement goes on, as the adapter handed it in (InboundMessage's fields). */
export interface AcknowledgeTarget {
  chatId: string;
  externalId: string;
  senderId: string;
  /** The owner in their admin chat: on WhatsApp the linked account's own message (its key is fromMe). */
  fromOwner: boolean;
}

/** Durable key/value state a channel keeps in the host's SQLite (Telegram's update offset), scoped to it. */
export interface ChannelStateStore {
  get(key: string): string | undefined;
  set(key: string, value: string): void;
}

/** What the registry hands a channel's factory. */
export interface ChannelDeps<C> {
  config: C;
  /** Secret lookup by variable NAME (config holds names, e.g. bot_token_env). */
  secret(name: string): string | undefined;
  state: ChannelStateStore;
  /** The channel's own 0700 folder under the data folder (WhatsApp auth state). */
  dataDir: string;
  logger: Logger;
  /**
   * `[assistant] name`: the trigger word is `@<name>` (Telegram warns when privacy mode hides it). Optional
   * so that a host that does not know it yet (a CLI check) still builds deps; adapters then assume the worst.
   */
  assistantName?: string;
  /** The host's clock, for the adapter's own timers (reconnects, watchdogs, typing renewals). */
  clock?: Clock;
}

/** What a chat id names on a channel (ChannelDefinition.chatKind). */
export type ChatKind =
  /** A chat the channel reads and answers as a group: it may be registered. */
  | { kind: 'group' }
  /** The owner's admin chat on this channel: it already is the admin conversation. */
  | { kind: 'admin' }
  /** A kind of chat the channel never reads (WhatsApp private chats), with why and what to do instead. */
  | { kind: 'unserved'; reason: string };

/** What a channel may consult to classify a chat id: its config and its own folder, never the network. */
export interface ChatFacts<C> {
  config: C;
  /** The channel's own folder under the data folder (WhatsApp: the linked account's credentials). */
  dataDir: string;
}

/**
 * What a channel's platform can do, each either `true` or why not. The conformance suite
 * (test/conformance/channel-conformance.ts) runs the tests a capability needs and skips the rest with the
 * reason in their name, so a lacking capability is a documented fact of the platform, not a missing test.
 */
export interface ChannelCapabilities {
  /** People other than the owner write in the channel's groups (mention the bot, reply to it). */
  members: true | string;
  /** A message can carry someone else's words as a forward, with the platform naming their author. */
  forwards: true | string;
  /** A send can fail in transit and succeed when retried. */
  transientSendFailures: true | string;
  /** The platform can move a chat to a new id (Telegram's supergroup upgrade). */
  chatMoves: true | string;
  /** The channel holds a connection that can drop and come back. */
  connectionDrops: true | string;
  /** Sends share one connection, so a send that the server refuses by closing it cuts every chat off. */
  sharedConnection: true | string;
  /** A delivered piece's buttons can be taken off afterwards (`Channel.retractActions`). */
  retractActions: true | string;
  /** A message can carry a reaction, which acknowledges the one that triggered a run (`Channel.acknowledge`). */
  reactions: true | string;
  /** The platform shows a typing indicator that expires and is renewed (`Channel.typingRenewMs`). */
  typing: true | string;
  /** The bot can delete a message it sent, for everyone (`Channel.unsend`). */
  unsend: true | string;
  /** The bot can change the text of a message it sent, so a long answer streams into one message (`Channel.editText`). */
  edits: true | string;
}

/** One entry of the channel registry (host/channels/registry.ts). */
export interface ChannelDefinition<C = unknown> {
  name: string;
  /** The `[channels.<name>]` section's schema; an absent section means "not configured". */
  configSchema: z.ZodType<C>;
  /**
   * How the agent should format replies on this channel, as prose for its system prompt (the registry
   * hands it to each run). Written in the adapter's folder, beside the code that renders the replies.
   */
  formattingRules: string;
  capabilities: ChannelCapabilities;
  /** Validates a chat id for `groups add --channel <name> --chat <id>`, with an example for the error. */
  chatId: { pattern: RegExp; example: string };
  /**
   * What `chatId` names here, from the id, the config and the channel's folder alone (the host may be
   * stopped). Registration refuses admin chats and chats the channel never reads; `carapace chats` lists
   * neither. Without it every well-formed id is a group.
   */
  chatKind?(chatId: string, facts: ChatFacts<C>): ChatKind;
  /**
   * Why no group can be registered on the channel yet, with the fix (WhatsApp before its login: a group
   * registered then only fails later, at the first reply); undefined when one can.
   */
  registrationBlocked?(facts: ChatFacts<C>): string | undefined;
  /** How to configure the channel, for the error when it is used without being configured. */
  setupHint: string;
  create(deps: ChannelDeps<C>): Channel;
  /** Checks for `carapace doctor` (token valid, privacy mode, login state…), each with its fix. */
  doctor?(deps: ChannelDeps<C>): Promise<{ ok: boolean; line: string }[]>;
}

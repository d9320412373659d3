import crypto from 'node:crypto';
import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { describeZodIssues } from '../../../container-agent/src/rpc/zod-issues.ts';
import { consoleView } from '../console-view.ts';
import type { WebConsoleDeps, WebEnv } from '../web-console-deps.ts';
import { messagePage, repliesList } from './message-page.ts';

const REPLIES_SHOWN = 50;
const messageForm = z.object({
  text: z
    .string()
    .trim()
    .min(1, 'the message is empty')
    .max(32_000, 'the message is longer than 32000 characters'),
  // Drawn when the form was rendered: sending the same form twice (a reload, a double tap) stores it once.
  clientMessageId: z.string().regex(/^web-[A-Za-z0-9_-]{16,40}$/),
});
const repliesQuery = z.object({ after: z.coerce.number().int().min(0) });

/**
 * The owner writing to the console's admin group (mounted at `/message`), through the path `carapace send`
 * takes, and what the host delivered there after it.
 */
export function createMessageRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const { render } = consoleView(deps);
  const chat = deps.adminChat;
  const show = (
    c: Context<WebEnv>,
    p: { notice?: string; after?: number; text?: string },
    status: 200 | 400 | 404 | 503 = 200,
  ) =>
    render(
      c,
      'Message',
      messagePage({
        csrf: c.get('auth').csrf,
        groupId: chat?.groupId(),
        clientMessageId: `web-${crypto.randomBytes(18).toString('base64url')}`,
        ...p,
        ...(p.after === undefined || !chat
          ? {}
          : { replies: repliesList(chat.repliesAfter(p.after, REPLIES_SHOWN)) }),
      }),
      status,
    );

  const app = new Hono<WebEnv>();
  app.get('/', (c) => {
    const q = repliesQuery.safeParse(c.req.query());
    return show(c, q.success ? { after: q.data.after } : {});
  });
  app.get('/replies', (c) => {
    const q = repliesQuery.safeParse(c.req.query());
    if (!q.success || !chat) return c.html(repliesList([]), 400);
    return c.html(repliesList(chat.repliesAfter(q.data.after, REPLIES_SHOWN)));
  });
  app.post('/', async (c) => {
    if (!chat) return show(c, { notice: 'This host has no local console admin group.' }, 404);
    const body = await c.req.parseBody();
    const form = messageForm.safeParse(body);
    if (!form.success)
      return show(
        c,
        {
          notice: `Not sent: ${describeZodIssues(form.error)}.`,
          ...(typeof body.text === 'string' ? { text: body.text.slice(0, 32_000) } : {}),
        },
        400,
      );
    // The console channel's own path for the owner's words, as `carapace send` takes.
    const sent = chat.send(form.data.text, form.data.clientMessageId);
    if (!sent.ok) return show(c, { notice: `Not sent: ${sent.error}.`, text: form.data.text }, sent.status);
    deps.store.audit.record({
      groupId: sent.groupId,
      operation: 'web.message',
      decision: sent.duplicate ? 'duplicate' : 'sent',
      approver: `web:${c.get('auth').session.id}`,
      reason: 'the owner wrote to the admin group from the web console',
      details: {
        messageId: sent.messageId,
        chars: form.data.text.length,
        triggered: sent.triggered,
        command: sent.commandReplyKey !== null,
      },
    });
    // After a POST, a GET: a reload does not ask to send again, and the page follows the answers.
    return c.redirect(`/message?after=${sent.after}`, 303);
  });
  return app;
}

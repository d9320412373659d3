import { Hono, type Context } from 'hono';
import { z } from 'zod';
import { RegistrationRefused } from '../../admin/register-group.ts';
import { consoleView } from '../console-view.ts';
import type { WebConsoleDeps, WebEnv } from '../web-console-deps.ts';
import { groupsPage } from './groups-page.ts';

const registerForm = z.object({
  id: z.string().trim().min(1).max(64),
  channel: z.string().min(1).max(40),
  chat: z.string().min(1).max(200),
});

/** Registered groups and the chats that wrote unregistered (mounted at `/groups`); registration is `groups add`'s. */
export function createGroupsRoutes(deps: WebConsoleDeps): Hono<WebEnv> {
  const { store } = deps;
  const { render, fmt } = consoleView(deps);
  const show = (c: Context<WebEnv>, notice?: string, status: 200 | 400 = 200) =>
    render(
      c,
      'Groups and chats',
      groupsPage(
        store.groups.list(),
        deps.config(),
        store.chatsSeen.list().filter((s) => !store.groups.findByChat(s.channel, s.chatId)),
        c.get('auth').csrf,
        fmt(),
        notice,
      ),
      status,
    );

  const app = new Hono<WebEnv>();
  app.get('/', (c) => show(c));
  app.post('/register', async (c) => {
    const form = registerForm.safeParse(await c.req.parseBody());
    if (!form.success) return show(c, 'A group needs an id, a channel and a chat.', 400);
    const who = `web:${c.get('auth').session.id}`;
    try {
      const g = deps.registerGroup({ id: form.data.id, channel: form.data.channel, chatId: form.data.chat });
      store.audit.record({
        groupId: g.id,
        operation: 'groups.add',
        decision: 'applied',
        approver: who,
        reason: 'registered from the web console',
        details: { channel: g.channel, chatId: g.chatId },
      });
      return show(c, `Registered ${g.id} (${g.channel}:${g.chatId}, network ${g.networkMode}).`);
    } catch (err) {
      if (err instanceof RegistrationRefused) return show(c, `Not registered: ${err.message}`, 400);
      throw err;
    }
  });
  return app;
}

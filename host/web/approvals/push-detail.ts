import { z } from 'zod';
import type { ConsoleFormat } from '../format.ts';
import { h, type Html } from '../html.ts';

// The parameters a git push's approval carries (gateway/credential/credential-route.ts with summarizePush). Read
// loosely: any other request, or a push recorded before commits were, shows only the chat's text.
const pushParams = z.object({
  remote: z.string().optional(),
  push: z.array(z.object({ ref: z.string(), from: z.string(), to: z.string() })),
  commits: z.array(z.object({ id: z.string(), author: z.string(), date: z.string(), message: z.string() })),
  commitsNotShown: z.number().optional(),
  files: z.array(z.string()),
  filesNotShown: z.number().optional(),
  filesNotNamed: z.string().optional(),
});

/** A push request's commits and files, readable on a phone; empty for anything that is not a push. */
export function pushDetail(paramsJson: string | undefined, f: ConsoleFormat): Html {
  if (paramsJson === undefined) return h``;
  let parsed;
  try {
    parsed = pushParams.safeParse(JSON.parse(paramsJson));
  } catch {
    return h``;
  }
  if (!parsed.success) return h``;
  const p = parsed.data;
  return h`<div class="push">
<h3>Push${p.remote ? h` to ${p.remote}` : ''}</h3>
<ul>${p.push.map((u) => h`<li>${u.ref}: <span class="sha">${u.from}</span> → <span class="sha">${u.to}</span></li>`)}</ul>
<h3>Commits (${p.commits.length + (p.commitsNotShown ?? 0)})</h3>
<ul class="commits">${p.commits.map((c) => {
    const [subject = '', ...body] = c.message.split('\n');
    const rest = body.join('\n').trim();
    return h`<li data-commit="${c.id}"><strong>${subject}</strong> <span class="sha">${c.id}</span><br><span class="muted">${c.author}, ${f.at(c.date)}</span>${rest ? h`<pre>${rest}</pre>` : ''}</li>`;
  })}${p.commitsNotShown ? h`<li class="muted">and ${p.commitsNotShown} more</li>` : ''}</ul>
<h3>Files</h3>
${
  p.files.length === 0
    ? h`<p class="muted">The push names no file.</p>`
    : h`<ul class="files">${p.files.map((name) => h`<li>${name}</li>`)}${p.filesNotShown ? h`<li class="muted">and ${p.filesNotShown} more</li>` : ''}</ul>`
}
${p.filesNotNamed ? h`<p class="muted">${p.filesNotNamed}.</p>` : ''}
</div>`;
}

/** How replies should be formatted on each channel, as prose for the agent's system prompt. */
const RULES: Record<string, string> = {
  local: 'You are talking to the owner in a terminal. Use plain text or light Markdown; keep lines readable.',
  telegram:
    'Telegram: use short paragraphs; *bold*, _italic_, `code`, ```code blocks``` and [links](https://…) work; avoid tables and headings. Messages over 4096 characters are split.',
  whatsapp:
    'WhatsApp: use short paragraphs; *bold*, _italic_, ~strike~ and ```code``` work; no Markdown links, headings or tables.',
};

export function formattingRulesFor(channel: string): string {
  return RULES[channel] ?? 'Use plain text.';
}

import { describe, expect, it } from 'vitest';
import { consoleHelp } from '../../../host/cli/chat-repl.ts';

describe('the console chat', () => {
  it('answers /help itself, listing what it understands, instead of sending it to the assistant', () => {
    const help = consoleHelp('/help', 'stops the host');
    expect(help).toContain('/quit, /exit    stops the host');
    expect(help).toContain('approve <id>');
  });

  it('keeps any other lone /word from reaching the assistant by mistake, and says so', () => {
    expect(consoleHelp('/hlep', 'leaves')).toBe(
      '(/hlep is not a console command and was not sent; /help lists them)\n',
    );
  });

  it('leaves admin commands and ordinary lines to the host', () => {
    expect(consoleHelp('/pending', 'leaves')).toBeUndefined();
  });
});

/**
 * ask_agent: one assistant asks another (agents.json `canAsk`) and gets its
 * answer. The question travels through the bus as a message to the other
 * agent, in a session of its own per asker (`cli:ask-<asker>`), so the other
 * answers in its own context — its workspace, memory, personality and tools
 * — and sees nothing of the asker's files or conversation. An asked agent
 * cannot ask further (depth 1), so two agents cannot ask each other in
 * circles. The answer is another model's text: untrusted, like a web page.
 */
import { z } from 'zod';
import { describeError } from '../errors/index.js';
import { fail, type Tool, type ToolContext } from './types.js';

/** The chat id an asked agent's session carries: `ask-<asker>`. */
export const ASK_CHAT_PREFIX = 'ask-';

/** How the tool reaches the other agents (the bus in the daemon: src/app/roles.ts). */
export interface AgentAsker {
  /** This agent's id (the asker). */
  readonly self: string;
  /** The agents it may ask. */
  readonly agents: readonly string[];
  /** Sends `question` to `agent` and resolves with its answer; rejects when none comes in time. */
  ask(agent: string, question: string, signal: AbortSignal, trace?: ToolContext['trace']): Promise<string>;
}

/** How long an asked agent may take (its turn may use tools). */
export const ASK_TIME_LIMIT_MS = 10 * 60_000;

/** The ask_agent tool over `asker`. */
export function createAskAgentTool(asker: AgentAsker) {
  const parameters = z.object({
    agent: z
      .string()
      .min(1)
      .describe(`Who to ask: one of ${asker.agents.join(', ')}`),
    question: z
      .string()
      .min(1)
      .max(20_000)
      .describe(
        'The question, stated fully: the other assistant sees nothing of this conversation or your files',
      ),
  });
  const tool: Tool<typeof parameters> = {
    name: 'ask_agent',
    untrustedOutput: "another assistant's answer",
    timeLimitMs: ASK_TIME_LIMIT_MS,
    description:
      `Ask another assistant (${asker.agents.join(', ')}) a question and get its answer. ` +
      'It answers in its own context with its own memory and tools, and cannot see your files or this conversation: ' +
      'include everything it needs in the question.',
    parameters,
    async execute({ agent, question }, ctx) {
      if (!asker.agents.includes(agent))
        return fail(`you may ask ${asker.agents.join(', ')}; "${agent.slice(0, 40)}" is not one of them`);
      if (ctx.channel === 'cli' && ctx.chatId.startsWith(ASK_CHAT_PREFIX))
        return fail('an assistant that was asked cannot ask another in turn: answer with what you know');
      if (ctx.depth > 0) return fail('helpers cannot ask other assistants');
      try {
        const answer = await asker.ask(agent, question, ctx.signal, ctx.trace);
        return { forLLM: `${agent} answered:\n${answer}` };
      } catch (err) {
        return fail(`${agent} did not answer: ${describeError(err)}`);
      }
    },
  };
  return tool;
}

import { describe, expect, it } from "vitest";
import { FAILED_ANSWER } from "../../src/services/chat/chat-exchange.ts";
import { startTestApp } from "../helpers/test-app.ts";
import { signedInUser } from "./app-helpers.ts";
import { CHAT_MODEL, newConversation, readConversation, sendMessage, startChatStack } from "./chat-stack.ts";

describe("Chat answer on an installation without zones", () => {
  it("no machine can serve the model: model_unavailable", async () => {
    const t = await startTestApp({ config: { models: [{ id: CHAT_MODEL, kind: "chat" }] } });
    try {
      const user = await signedInUser(t);
      const id = await newConversation(user);
      const { events } = await sendMessage(user, id, { content: "hello", model: CHAT_MODEL });
      expect(events[0]).toEqual({ type: "error", code: "model_unavailable", message: expect.any(String) });
      expect(events[1]).toMatchObject({ type: "done", outcome: "error" });
    } finally {
      await t.close();
    }
  });
});

describe("Chat answer on a prepaid installation", () => {
  it("no credits left: upstream_error saying so, nothing sent to a model, the failure text saved; with credits it answers", async () => {
    const s = await startChatStack({
      config: {
        installation: {
          zones: [{ id: "ch-ti" }, { id: "ch-zh" }],
          fallback_zone: "ch-fb",
          prepaid: true,
          currency: "credits",
        },
      },
    });
    try {
      const user = await signedInUser(s.t);
      const id = await newConversation(user);
      const { events } = await sendMessage(user, id, { content: "hello", model: CHAT_MODEL });
      expect(events[0]).toEqual({
        type: "error",
        code: "upstream_error",
        message: expect.stringContaining("credits"),
      });
      expect(events[1]).toMatchObject({ type: "done", outcome: "error" });
      expect(s.chatRequests()).toHaveLength(0);
      expect((await readConversation(user, id)).messages[1].content).toBe(FAILED_ANSWER);
      const credited = await s.t.admin("POST", `/accounts/${user.accountId}/credits`, { amount: 10 });
      expect(credited.status).toBeLessThan(300);
      const answered = await sendMessage(user, id, { content: "hello again", model: CHAT_MODEL });
      expect(answered.events.at(-1)).toMatchObject({ type: "done", outcome: "ok" });
      await s.jobsIdle();
    } finally {
      await s.close();
    }
  });
});

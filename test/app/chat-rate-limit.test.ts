import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signedInUser } from "./app-helpers.ts";
import { CHAT_MODEL, type ChatStack, newConversation, sendMessage, startChatStack } from "./chat-stack.ts";

describe("Rate limits: POST /chat/sessions/{id}/messages, 30 per minute per signed-in user, on the shared user counter", () => {
  let s: ChatStack;
  beforeAll(async () => {
    s = await startChatStack();
  });
  afterAll(() => s.close());

  it("the 31st is 429 `Too Many Attempts.` with Retry-After; the counter is the one of the user's other limited calls", async () => {
    const user = await signedInUser(s.t);
    const id = await newConversation(user);
    for (let i = 0; i < 30; i++) {
      const response = await user.post(`/chat/sessions/${id}/messages`, { content: "" });
      expect(response.status).toBe(422);
      expect(response.headers.get("x-ratelimit-limit")).toBe("30");
    }
    const refused = await user.post(`/chat/sessions/${id}/messages`, { content: "hello", model: CHAT_MODEL });
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({ message: "Too Many Attempts." });
    const retryAfter = Number(refused.headers.get("retry-after"));
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(s.chatRequests()).toHaveLength(0);
    // Shared counter: transcriptions (also 30) are refused too.
    expect((await user.fetch("/audio/transcribe", { method: "POST" })).status).toBe(429);
    // Another user has a counter of their own.
    const other = await signedInUser(s.t);
    const otherId = await newConversation(other);
    const { events } = await sendMessage(other, otherId, { content: "hello", model: CHAT_MODEL });
    expect(events.at(-1)).toMatchObject({ outcome: "ok" });
    await s.jobsIdle();
  });
});

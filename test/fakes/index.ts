/**
 * Fake engines for tests and benchmarks: real HTTP servers on 127.0.0.1 speaking the upstream
 * protocols (vLLM-style OpenAI, Ollama, text-embeddings-inference).
 *
 *   const fake = new FakeOpenAiServer({ chunks: 64, chunkDelayMs: 20 });
 *   const { url, close } = await fake.start();
 *   await fake.setMode("error500");   // normal | refuse | error500 | hang | slow | dropMidStream
 *   fake.configure({ errorStatus: 429 });
 *   fake.requests / fake.lastRequest / fake.requestsTo("/v1/chat/completions")
 *   const machine = fakeMachine("openai", url, { name: "gpu-1", zone: "ch" });
 */
export { base64Vector, fakeEmbedding, generate, wordOverlap } from "./fake-generation.ts";
export { fakeMachine } from "./fake-machine.ts";
export { FakeOllamaServer } from "./fake-ollama-server.ts";
export { FakeOpenAiServer } from "./fake-openai-server.ts";
export {
  DEFAULT_FAKE_SETTINGS,
  type FakeMode,
  type FakeRequest,
  FakeServer,
  type FakeSettings,
  type StartedFake,
} from "./fake-server.ts";
export { FakeTeiServer } from "./fake-tei-server.ts";

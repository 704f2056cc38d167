/** A response body as JSON, typed loosely: the tests assert its shape. */
// biome-ignore lint/suspicious/noExplicitAny: test bodies are checked by assertions, not by types.
export async function readJson(response: Response): Promise<any> {
  return response.json();
}

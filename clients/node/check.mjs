// The official openai npm client against a Stepthrough server: chat with
// logprobs, a stop sequence, streaming, a tool call the client answers,
// Stepthrough's "stepthrough" extension (whole, streamed, refused), and an
// error. BASE_URL is the server's /v1; prints one line per check and
// exits non-zero when one fails.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: process.env.API_KEY || "unused", maxRetries: 0 });
let failed = 0;
function check(name, ok, detail) {
  console.log(`${ok ? "ok  " : "FAIL"} ${name}${ok ? "" : ": " + JSON.stringify(detail)}`);
  if (!ok) failed++;
}
const user = (content) => [{ role: "user", content }];

const chat = await client.chat.completions.create({ model: "lesson.gguf", messages: user("What is the capital of France?"), temperature: 0, logprobs: true, top_logprobs: 2 });
const c = chat.choices[0];
check("chat", c.message.content === "The capital of France is Paris." && c.finish_reason === "stop", c);
check("logprobs", c.logprobs.content.map((t) => t.token).join("") === c.message.content && c.logprobs.content.every((t) => t.top_logprobs.length === 2 && t.logprob <= 0), c.logprobs);
check("usage", chat.usage.total_tokens === chat.usage.prompt_tokens + chat.usage.completion_tokens && chat.usage.prompt_tokens > 0, chat.usage);

const stopped = await client.chat.completions.create({ model: "lesson.gguf", messages: user("What is the capital of France?"), temperature: 0, stop: ["ranc", "xyz"] });
check("stop", stopped.choices[0].message.content === "The capital of F" && stopped.choices[0].finish_reason === "stop", stopped.choices[0]);

const stream = await client.chat.completions.create({ model: "lesson.gguf", messages: user("What is the capital of Spain?"), temperature: 0, stream: true, stream_options: { include_usage: true } });
let text = "", chunks = 0, usage = null;
for await (const chunk of stream) {
  chunks++;
  if (chunk.usage) usage = chunk.usage;
  for (const ch of chunk.choices) text += ch.delta.content ?? "";
}
check("stream", text.includes("Madrid") && chunks > 3 && usage && usage.completion_tokens > 0, { text, chunks, usage });

const tools = [{ type: "function", function: { name: "calculator", description: "Adds or subtracts two whole numbers.", parameters: { type: "object", properties: { expression: { type: "string" } }, required: ["expression"] } } }];
const messages = user("What is 347 + 85?");
const first = await client.chat.completions.create({ model: "lesson.gguf", messages, temperature: 0, tools });
const call = first.choices[0].message.tool_calls?.[0];
check("tool call", first.choices[0].finish_reason === "tool_calls" && call?.function.name === "calculator", first.choices[0]);
if (call) {
  const { expression } = JSON.parse(call.function.arguments);
  const [a, b] = expression.split("+").map(Number); // the client runs the tool
  messages.push(first.choices[0].message, { role: "tool", tool_call_id: call.id, content: String(a + b) });
  const second = await client.chat.completions.create({ model: "lesson.gguf", messages, temperature: 0, tools });
  check("tool result", second.choices[0].message.content.includes(String(a + b)) && second.choices[0].finish_reason === "stop", second.choices[0]);
}

// Stepthrough's extension, passed as an undocumented request param (sent as-is in the body)
const stepthrough = { logit_lens: { top_k: 2 }, attention: { layers: [0], heads: [0, 1] }, residual_norms: true, trace_url: true };
const probe = await client.chat.completions.create({ model: "lesson.gguf", messages: user("What is the capital of France?"), temperature: 0, max_tokens: 4, stepthrough });
const toks = probe.choices[0].stepthrough?.tokens ?? [];
const sum = (xs) => xs.reduce((a, b) => a + b, 0);
check("stepthrough", toks.length === probe.usage.completion_tokens && toks.every((t, j) => t.index === j && t.logit_lens.length === 4 &&
  t.logit_lens.every((l) => l.top.length === 2) && t.logit_lens[3].top[0].id === t.id && t.logit_lens[3].final_rank === 1 &&
  t.attention.length === 2 && t.attention[0].weights.length === t.position + 1 && Math.abs(sum(t.attention[1].weights) - 1) < 1e-4 &&
  t.residual_norms.length === 4 && t.trace_url.endsWith(`/requests/${probe.id}#token-${j}`)), probe.choices[0]);
const pstream = await client.chat.completions.create({ model: "lesson.gguf", messages: user("What is the capital of France?"), temperature: 0, max_tokens: 4, stream: true, stepthrough });
const streamed = [];
for await (const chunk of pstream) for (const ch of chunk.choices) streamed.push(...(ch.stepthrough?.tokens ?? []));
check("stepthrough streamed", JSON.stringify(streamed.map((t) => [t.id, t.logit_lens, t.attention, t.residual_norms])) === JSON.stringify(toks.map((t) => [t.id, t.logit_lens, t.attention, t.residual_norms])), { streamed, toks });
try {
  await client.chat.completions.create({ model: "lesson.gguf", messages: user("Hi"), stepthrough: { attention: { layers: [9], heads: [0] } } });
  check("stepthrough refused", false, "no error");
} catch (e) {
  check("stepthrough refused", e.status === 400 && e.param === "stepthrough.attention.layers[0]", { status: e.status, param: e.param, message: e.message });
}

try {
  await client.chat.completions.create({ model: "nope.gguf", messages: user("Hi") });
  check("unknown model", false, "no error");
} catch (e) {
  check("unknown model", e.status === 404 && e.code === "model_not_found", { status: e.status, code: e.code });
}
process.exit(failed ? 1 : 0);

//! A stand-in for dsh-vision-router (v1.7.7, MIT, https://github.com/ysr666/dsh-vision-router; not on npm) with the
//! contract of its `vision_ground` and `vision_activate`: the same parameters and output, and the same way of finding
//! an image. A `sha256:` id is resolved only among the image blocks (`{type: "image", attachment}`) recorded in the
//! calling session's event log (`exec.agent.session.events`, the router's `lookupAttachment` →
//! `collectEventAttachmentRefs`, index.js L844 and L4706, copied below with `rewriteImagesDeep`, L614), and the bytes
//! come from `attachments.readImage(ref)`; an id found nowhere there is "unknown attachment id". Where the router asks
//! a vision model for the box, the stand-in finds the red pixels itself. With `progressive` (the router's
//! `progressiveTools`), only `vision_activate` is registered until it is called; it then mounts `vision_ground`.

import { decodePng } from "../../test-support/png.mjs";

// ── copied from dsh-vision-router v1.7.7 index.js (MIT) ────────────────────────────────────────────────────────────

export function isAttachmentIdInput(input) {
  return typeof input === "string" && /^[a-z0-9]+:[0-9a-f]{32,}$/i.test(input.trim());
}

export function rewriteImagesDeep(content, replace) {
  if (!Array.isArray(content)) return { content, changed: false };
  let changed = false;
  const next = [];
  for (const block of content) {
    if (block && block.type === "image") {
      changed = true;
      const out = replace(block);
      if (out !== undefined && out !== null) {
        if (Array.isArray(out)) next.push(...out);
        else next.push(out);
      }
      continue;
    }
    if (block && Array.isArray(block.content)) {
      const inner = rewriteImagesDeep(block.content, replace);
      if (inner.changed) {
        changed = true;
        next.push({ ...block, content: inner.content });
        continue;
      }
    }
    next.push(block);
  }
  return { content: changed ? next : content, changed };
}

export function collectEventAttachmentRefs(events) {
  const refs = [];
  const seen = new Set();
  for (const event of events ?? []) {
    if (!event || !event.data) continue;
    let message;
    if (event.type === "user/message") {
      message = event.data;
    } else if (event.type === "assistant/message" || event.type === "tool/result") {
      message = event.data.message;
    } else {
      continue;
    }
    if (!message || !Array.isArray(message.content)) continue;
    rewriteImagesDeep(message.content, (block) => {
      const attachment = block && block.attachment;
      if (attachment && attachment.attachmentId && !seen.has(String(attachment.attachmentId))) {
        seen.add(String(attachment.attachmentId));
        refs.push(attachment);
      }
      return block;
    });
  }
  return refs;
}

// ── the stand-in plugin ────────────────────────────────────────────────────────────────────────────────────────────

/** The red box of a PNG, as `vision_ground` answers it (`{x1, y1, x2, y2, width, height}` in the image's pixels). */
function redBox(bytes) {
  const img = decodePng(bytes);
  let [x1, y1, x2, y2] = [Infinity, Infinity, -1, -1];
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      const [r, g, b] = img.rgb(x, y);
      if (r > 200 && g < 60 && b < 60) [x1, y1, x2, y2] = [Math.min(x1, x), Math.min(y1, y), Math.max(x2, x + 1), Math.max(y2, y + 1)];
    }
  }
  return x2 < 0 ? null : { x1, y1, x2, y2, width: img.width, height: img.height };
}

/**
 * The plugin and what happened to its tools: `registered` (names it registered), `calls` (each execution of
 * `vision_activate` / `vision_ground`, with its arguments).
 */
export function visionRouterStandIn({ progressive = false } = {}) {
  const stats = { registered: [], calls: [] };
  const stringOutput = { schema: { type: "string" }, render: (_a, v) => [{ type: "text", text: v }] };
  const plugin = {
    name: "vision-router-stand-in",
    inject: ["tools", "attachments"],
    apply(ctx) {
      const register = (def) => {
        stats.registered.push(def.name);
        ctx.effect(() => ctx.tools.register(def), def.name);
      };
      const ground = {
        name: "vision_ground",
        description: "Locate a target in an image and return its ORIGINAL-pixel bounding box (x1/y1/x2/y2).",
        parameters: {
          type: "object",
          properties: { image: { type: "string" }, target: { type: "string" }, annotate: { type: "boolean" } },
          required: ["image", "target"],
          additionalProperties: false,
        },
        output: stringOutput,
        async execute(args, exec) {
          stats.calls.push({ name: "vision_ground", args });
          const input = String(args.image ?? "");
          if (!isAttachmentIdInput(input)) throw new Error(`stand-in: ${input} is not an attachment id`);
          const session = exec && exec.agent && exec.agent.session;
          const ref = collectEventAttachmentRefs(session?.events).find((r) => String(r.attachmentId) === input.trim());
          if (ref === undefined) {
            throw new Error(
              `vision-router: unknown attachment id "${input}" (it must come from an image uploaded in this conversation)`,
            );
          }
          const stored = await ctx.get("attachments").readImage(ref);
          const box = redBox(stored.data);
          if (!box) return JSON.stringify({ ok: false, error: `no ${args.target}` });
          // The router writes an annotated PNG into the workspace unless annotate is false.
          if (args.annotate !== false) box.annotatedPath = ".dsh-vision-router/artifacts/ground.png";
          return JSON.stringify(box);
        },
      };
      let mounted = false;
      const mount = () => {
        if (mounted) return "already mounted";
        mounted = true;
        register(ground);
        return "mounted: vision_ground";
      };
      if (!progressive) {
        mount();
        return;
      }
      register({
        name: "vision_activate",
        description: "Mount the deep vision tools (vision_ground / …) for this session.",
        parameters: { type: "object", properties: {}, additionalProperties: false },
        output: stringOutput,
        async execute(args) {
          stats.calls.push({ name: "vision_activate", args });
          return mount();
        },
      });
    },
  };
  return { plugin, stats };
}

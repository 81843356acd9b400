//! Reads the picture check of the fixture site (`/vision-check.html`) from a screenshot's pixels, the way a vision
//! model would have to: finds the yellow code box and decodes the block-font code in it (the font the page draws with,
//! `crates/browserd-fixtures/fixtures/vision-font.json`), and finds the red dot's centre. Everything is in the
//! screenshot's own image pixels.

import fs from "node:fs";
import { fileURLToPath } from "node:url";

import { decodePng } from "./png.mjs";

const FONT = JSON.parse(
  fs.readFileSync(fileURLToPath(new URL("../../crates/browserd-fixtures/fixtures/vision-font.json", import.meta.url)), "utf8"),
).glyphs;

const near = (px, rgb, tol) => px.every((v, i) => Math.abs(v - rgb[i]) <= tol);

/** Bounding box (inclusive) of the pixels close to `rgb`; `null` when none. */
function box(img, test) {
  let [x0, y0, x1, y1] = [Infinity, Infinity, -1, -1];
  for (let y = 0; y < img.height; y++) {
    for (let x = 0; x < img.width; x++) {
      if (test(img.rgb(x, y))) {
        x0 = Math.min(x0, x);
        y0 = Math.min(y0, y);
        x1 = Math.max(x1, x);
        y1 = Math.max(y1, y);
      }
    }
  }
  return x1 < 0 ? null : { x0, y0, x1, y1 };
}

/**
 * The code and the dot's centre that a PNG screenshot of the picture check shows, in image pixels.
 * @returns {{code: string, dot: {x: number, y: number}, width: number, height: number}}
 */
export function readPicture(pngBytes) {
  const img = decodePng(pngBytes);
  const yellow = box(img, (px) => near(px, [0xff, 0xe0, 0x8a], 6));
  if (!yellow) throw new Error("no code box in the picture");
  const red = box(img, ([r, g, b]) => r > 200 && g < 60 && b < 60);
  if (!red) throw new Error("no red dot in the picture");
  // The box is 1 + 6 * n cells wide and 9 cells high.
  const w = yellow.x1 - yellow.x0 + 1;
  const h = yellow.y1 - yellow.y0 + 1;
  const cellH = h / 9;
  const n = Math.round((w / cellH - 1) / 6);
  const cellW = w / (1 + 6 * n);
  let code = "";
  for (let i = 0; i < n; i++) {
    const rows = [];
    for (let row = 0; row < 7; row++) {
      let line = "";
      for (let col = 0; col < 5; col++) {
        const x = Math.floor(yellow.x0 + (1 + 6 * i + col + 0.5) * cellW);
        const y = Math.floor(yellow.y0 + (1 + row + 0.5) * cellH);
        line += img.rgb(x, y)[0] < 100 ? "#" : ".";
      }
      rows.push(line);
    }
    const match = Object.entries(FONT).find(([, glyph]) => glyph.join("") === rows.join(""));
    if (!match) throw new Error(`glyph ${i} is not in the font:\n${rows.join("\n")}`);
    code += match[0];
  }
  return { code, dot: { x: (red.x0 + red.x1 + 1) / 2, y: (red.y0 + red.y1 + 1) / 2 }, width: img.width, height: img.height };
}

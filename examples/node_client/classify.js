#!/usr/bin/env node
// Classify images with an exported litstarter model in Node, following model.json alone (onnxruntime-node).
//
//   cd examples/node_client && npm ci --ignore-scripts   (see README.md)
//   node classify.js <export>/model.json image.png [more images ...]
//   node classify.js --inputs <export>/model.json image.png ...   (the preprocessed inputs, base64, no model run)
//
// Prints one JSON line per file: {"file", "pred", "prob", "probs"}. Decoding uses pngjs (PNG: grey, RGB, RGBA,
// palette, 16-bit; pngjs hands back 8-bit RGBA) and sharp (JPEG: libvips on libjpeg-turbo, the decoder PIL uses;
// its EXIF orientation is read here); every
// step after decoding follows model.json's "preprocessing": the channel rules, the resize (PIL's antialiased
// bilinear: filter stretched by the downscale factor, new sides rounded half to even, width pass first, 22-bit
// fixed-point weights) and both centre crops. PNG and JPEG files both match litstarter's own loader bit for bit
// (sharp and PIL gave the same pixels on 20 grey and colour JPEGs, 4:4:4, 4:2:2 and 4:2:0, quality 50 to 95; a CMYK
// JPEG goes through sharp's colour management instead of PIL's plain conversion and may differ).
"use strict";

const fs = require("fs");
const path = require("path");
const ort = require("onnxruntime-node");
const { PNG } = require("pngjs");
const sharp = require("sharp");

const BITS = 22;
const FILTERS = { bilinear: (x) => Math.max(0, 1 - Math.abs(x)) };

// Python's round(): halves go to the even neighbour (Math.round sends them up).
function roundHalfEven(value) {
  const floor = Math.floor(value);
  const diff = value - floor;
  if (diff > 0.5) return floor + 1;
  if (diff < 0.5) return floor;
  return floor % 2 === 0 ? floor : floor + 1;
}

// The orientation tag (0x0112) of EXIF data in TIFF layout starting at bytes[tiff]; 1 if it has none.
function tiffOrientation(bytes, tiff) {
  const little = bytes.toString("latin1", tiff, tiff + 2) === "II";
  const u16 = (o) => (little ? bytes.readUInt16LE(o) : bytes.readUInt16BE(o));
  const u32 = (o) => (little ? bytes.readUInt32LE(o) : bytes.readUInt32BE(o));
  const ifd = tiff + u32(tiff + 4);
  for (let i = 0; i < u16(ifd); i++) {
    const entry = ifd + 2 + i * 12;
    if (u16(entry) === 0x0112) return u16(entry + 8);
  }
  return 1;
}

// The EXIF orientation of a JPEG (its APP1 segment) or a PNG (its eXIf chunk); 1 if there is none.
function exifOrientation(bytes, isPng) {
  let at = isPng ? 8 : 2;
  while (at + 8 < bytes.length) {
    if (isPng) {
      const length = bytes.readUInt32BE(at);
      const type = bytes.toString("latin1", at + 4, at + 8);
      if (type === "eXIf") return tiffOrientation(bytes, at + 8);
      if (type === "IDAT" || type === "IEND") return 1;
      at += 12 + length;
    } else {
      if (bytes[at] !== 0xff || bytes[at + 1] === 0xda) return 1; // start of scan: no more metadata
      if (bytes[at + 1] === 0xe1 && bytes.toString("latin1", at + 4, at + 10) === "Exif\0\0") {
        return tiffOrientation(bytes, at + 10);
      }
      at += 2 + bytes.readUInt16BE(at + 2);
    }
  }
  return 1;
}

// Decode to {width, height, rgba: Uint8Array (H * W * 4)}, EXIF orientation applied.
async function decode(file) {
  const bytes = fs.readFileSync(file);
  const isPng = bytes.readUInt32BE(0) === 0x89504e47;
  let image;
  if (isPng) {
    // pngjs: 8-bit RGBA (16 bits scaled by floor(v * 255 / 65535 + 0.5), as litstarter's rounding gives them)
    const png = PNG.sync.read(bytes);
    image = { width: png.width, height: png.height, data: png.data };
  } else {
    // sharp never rotates unless asked (orient() below does it, as for PNG); grey becomes three equal channels
    const { data, info } = await sharp(bytes).toColourspace("srgb").ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    image = { width: info.width, height: info.height, data };
  }
  return orient({ width: image.width, height: image.height, rgba: new Uint8Array(image.data) }, exifOrientation(bytes, isPng));
}

// Apply an EXIF orientation 2-8, as PIL's ImageOps.exif_transpose.
function orient(image, orientation) {
  if (orientation <= 1 || orientation > 8) return image;
  const { width: w, height: h, rgba } = image;
  const swap = orientation >= 5;
  const ow = swap ? h : w;
  const oh = swap ? w : h;
  const out = new Uint8Array(rgba.length);
  for (let y = 0; y < oh; y++) {
    for (let x = 0; x < ow; x++) {
      const [sx, sy] = {
        2: [w - 1 - x, y], 3: [w - 1 - x, h - 1 - y], 4: [x, h - 1 - y], 5: [y, x],
        6: [y, h - 1 - x], 7: [w - 1 - y, h - 1 - x], 8: [w - 1 - y, x],
      }[orientation];
      out.set(rgba.subarray((sy * w + sx) * 4, (sy * w + sx) * 4 + 4), (y * ow + x) * 4);
    }
  }
  return { width: ow, height: oh, rgba: out };
}

// RGBA -> Float64 planes of colour_mode (C planes of H * W), following preprocessing.channels.
function toColorMode(image, colorMode) {
  const n = image.width * image.height;
  const rgb = [new Float64Array(n), new Float64Array(n), new Float64Array(n)];
  for (let i = 0; i < n; i++) {
    const a = image.rgba[i * 4 + 3];
    for (let c = 0; c < 3; c++) {
      const v = image.rgba[i * 4 + c];
      if (a === 255) rgb[c][i] = v;
      else if (a === 0) rgb[c][i] = 255;
      else { // composited onto opaque white with PIL's integer rounding
        const t = (v * a + 255 * (255 - a)) * 128 + 16384;
        rgb[c][i] = Math.floor(Math.floor((Math.floor(t / 256) + t) / 256) / 128);
      }
    }
  }
  if (colorMode === "RGB") return rgb;
  const grey = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    grey[i] = Math.floor((19595 * rgb[0][i] + 38470 * rgb[1][i] + 7471 * rgb[2][i] + 32768) / 65536);
  }
  return [grey];
}

// One axis's fixed-point weights: [{start, weights: [int]}] per output pixel, as preprocessing.resize states.
function axisWeights(inSize, outSize, resize) {
  const filter = FILTERS[resize.interpolation];
  if (!filter) throw new Error(`interpolation ${resize.interpolation} is not implemented here`);
  const scale = inSize / outSize;
  const stretch = resize.antialias ? Math.max(scale, 1) : 1;
  const support = resize.filter_support * stretch;
  const out = [];
  for (let i = 0; i < outSize; i++) {
    const center = (i + 0.5) * scale;
    const xmin = Math.max(Math.trunc(center - support + 0.5), 0);
    const xmax = Math.min(Math.trunc(center + support + 0.5), inSize);
    const w = [];
    let total = 0;
    for (let x = xmin; x < xmax; x++) {
      w.push(filter((x - center + 0.5) * (1 / stretch)));
      total += w[w.length - 1];
    }
    out.push({ start: xmin, weights: w.map((v) => Math.trunc((total ? v / total : v) * (1 << BITS) + 0.5)) });
  }
  return out;
}

// Resize planes (C of H * W) along one axis; every output rounded to uint8.
function resizeAxis(planes, h, w, outSize, horizontal, resize) {
  const table = axisWeights(horizontal ? w : h, outSize, resize);
  const [oh, ow] = horizontal ? [h, outSize] : [outSize, w];
  return planes.map((plane) => {
    const out = new Float64Array(oh * ow);
    for (let y = 0; y < oh; y++) {
      for (let x = 0; x < ow; x++) {
        const { start, weights } = table[horizontal ? x : y];
        let sum = 1 << (BITS - 1);
        for (let k = 0; k < weights.length; k++) {
          sum += weights[k] * (horizontal ? plane[y * w + start + k] : plane[(start + k) * w + x]);
        }
        out[y * ow + x] = Math.min(255, Math.max(0, Math.floor(sum / (1 << BITS))));
      }
    }
    return out;
  });
}

// One file -> Uint8Array (C * H * W) input, following contract.preprocessing only.
async function preprocess(file, contract) {
  const pre = contract.preprocessing;
  const image = await decode(file);
  let planes = toColorMode(image, pre.color_mode);
  let [h, w] = [image.height, image.width];
  const [th, tw] = pre.resize.size;
  const scale = Math.max(th / h, tw / w);
  const nw = Math.max(tw, roundHalfEven(w * scale));
  const nh = Math.max(th, roundHalfEven(h * scale));
  if (nw !== w) { planes = resizeAxis(planes, h, w, nw, true, pre.resize); w = nw; }
  if (nh !== h) { planes = resizeAxis(planes, h, w, nh, false, pre.resize); h = nh; }
  for (const [ch, cw] of [pre.resize.size, pre.crop.size]) {
    const top = Math.floor((h - ch) / 2);
    const left = Math.floor((w - cw) / 2);
    planes = planes.map((plane) => {
      const out = new Float64Array(ch * cw);
      for (let y = 0; y < ch; y++) for (let x = 0; x < cw; x++) out[y * cw + x] = plane[(top + y) * w + left + x];
      return out;
    });
    [h, w] = [ch, cw];
  }
  const input = new Uint8Array(planes.length * h * w);
  planes.forEach((plane, c) => input.set(plane, c * h * w));
  return input;
}

async function main() {
  const args = process.argv.slice(2);
  const inputsOnly = args[0] === "--inputs"; // print each file's preprocessed input (base64), for checking
  const [contractPath, ...files] = inputsOnly ? args.slice(1) : args;
  const contract = JSON.parse(fs.readFileSync(contractPath, "utf8"));
  if (inputsOnly) {
    for (const file of files) {
      console.log(JSON.stringify({ file, input: Buffer.from(await preprocess(file, contract)).toString("base64") }));
    }
    return;
  }
  const session = await ort.InferenceSession.create(path.join(path.dirname(contractPath), "model.onnx"));
  const [c, h, w] = [contract.input.shape[1], ...contract.preprocessing.crop.size];
  for (const file of files) {
    const tensor = new ort.Tensor("uint8", await preprocess(file, contract), [1, c, h, w]);
    const result = await session.run({ [contract.input.name]: tensor });
    const logits = Array.from(result[contract.output.name].data);
    const top = Math.max(...logits);
    const exps = logits.map((v) => Math.exp(v - top));
    const total = exps.reduce((a, b) => a + b, 0);
    const probs = exps.map((v) => v / total);
    const best = probs.indexOf(Math.max(...probs));
    console.log(JSON.stringify({ file, pred: contract.class_names[best], prob: probs[best], probs }));
  }
}

main().catch((error) => {
  console.error(`classify.js: error: ${error.message}`);
  process.exit(1);
});

/** The frame every sign-in page shares, and the one way pages are sent: escaped, with a CSP that allows this stylesheet by hash. */
import { createHash } from 'node:crypto';
import type { Response } from 'express';
import { html, SafeHtml } from '../../../http/html.js';
import { setPageSecurityHeaders } from '../../../http/security-headers.js';

const STYLE = `
*{box-sizing:border-box}
[hidden]{display:none!important}
body{margin:0;min-height:100vh;display:flex;align-items:center;justify-content:center;background:#f3f4f6;color:#111827;font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif}
main{width:100%;max-width:26rem;margin:1.5rem;padding:2rem;background:#fff;border-radius:.75rem;box-shadow:0 10px 30px rgba(0,0,0,.08)}
.brand{margin:0 0 1.5rem;font-weight:700;letter-spacing:.02em;color:var(--brand-text,#1d4ed8);display:flex;align-items:center;gap:.5rem}
.brand img{height:2rem;width:auto}
h1{margin:0 0 .75rem;font-size:1.4rem}
p{margin:0 0 1rem}
label{display:block;margin:0 0 1rem;font-weight:600}
input{display:block;width:100%;margin-top:.35rem;padding:.6rem .7rem;border:1px solid #6b7280;border-radius:.4rem;font:inherit}
input:focus{outline:2px solid var(--brand-text,#1d4ed8);outline-offset:1px;border-color:var(--brand-text,#1d4ed8)}
input[aria-invalid="true"]{border-color:#b91c1c}
button{padding:.65rem 1.1rem;border-radius:.4rem;border:1px solid var(--brand,#1d4ed8);background:var(--brand,#1d4ed8);color:var(--brand-fg,#fff);font:inherit;font-weight:600;cursor:pointer}
button.secondary{background:#fff;color:#1f2937;border-color:#6b7280}
.actions{display:flex;gap:.75rem;justify-content:flex-end;margin-top:1.5rem}
.alert{padding:.7rem .9rem;border-radius:.4rem;background:#fef2f2;color:#991b1b;border:1px solid #fecaca}
.warning{padding:.7rem .9rem;border-radius:.4rem;background:#fffbeb;color:#78350f;border:1px solid #fcd34d}
.notice{padding:.7rem .9rem;border-radius:.4rem;background:#f0fdf4;color:#166534;border:1px solid #bbf7d0}
h2{margin:1.5rem 0 .5rem;font-size:1.15rem}h3{margin:0 0 .25rem;font-size:1rem}
ul.apps{margin:0;padding:0;list-style:none}li.app{padding:.8rem 0;border-top:1px solid #e5e7eb}
li.app form .actions,li.app form{margin:0}
button:focus-visible,a:focus-visible{outline:3px solid var(--brand-text,#1d4ed8);outline-offset:2px}
.links-row{display:flex;flex-wrap:wrap;gap:.75rem;margin:0 0 1rem}
form.inline{display:inline;margin:0}button.link{padding:0;border:0;background:none;color:var(--brand-text,#1d4ed8);text-decoration:underline;font-weight:400}
ul.scopes{margin:0 0 1rem;padding-left:1.2rem}
ul.scopes li{margin:.3rem 0}
.muted{color:#6b7280;font-size:.9rem}
code{font-size:.85rem;word-break:break-all}
main.wide{max-width:52rem}
pre{margin:0 0 1rem;padding:.8rem;background:#f3f4f6;border-radius:.4rem;white-space:pre-wrap;word-break:break-all;font-size:.85rem}
dl{margin:0 0 1rem}dt{font-weight:600}dd{margin:0 0 .6rem}
ul.links{margin:0 0 1rem;padding:0;list-style:none}
ul.links li{margin:.5rem 0}
a{color:var(--brand-text,#1d4ed8)}
.copyable{display:flex;gap:.5rem;align-items:flex-start}.copyable>:first-child{flex:1;min-width:0}
button.copy{padding:.3rem .6rem;font-size:.85rem}
`;

/** Our own constant stylesheet: the one value that skips escaping. */
const TRUSTED_STYLE = new SafeHtml(STYLE);
const styleHash = (css: string) => `sha256-${createHash('sha256').update(css).digest('base64')}`;
const STYLE_HASH = styleHash(STYLE);

/** The deployment's brand, set once at start-up; the colour is validated as hex, so its one-rule stylesheet is safe to inline. */
export interface Brand {
  name: string;
  logoUrl: string | undefined;
  color: string;
}

type Rgb = [number, number, number];

function rgbOf(hex: string): Rgb {
  const digits = hex.length === 4 ? [...hex.slice(1)].map((digit) => digit + digit) : [hex.slice(1, 3), hex.slice(3, 5), hex.slice(5, 7)];
  return digits.map((pair) => parseInt(pair, 16)) as Rgb;
}

const hexOf = (rgb: Rgb) => `#${rgb.map((channel) => Math.round(channel).toString(16).padStart(2, '0')).join('')}`;

/** WCAG 2.2 relative luminance and contrast ratio. */
function luminance(rgb: Rgb): number {
  const [r, g, b] = rgb.map((channel) => {
    const c = channel / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  }) as Rgb;
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a: Rgb, b: Rgb): number {
  const [light, dark] = [luminance(a), luminance(b)].sort((x, y) => y - x) as [number, number];
  return (light + 0.05) / (dark + 0.05);
}

const WHITE: Rgb = [255, 255, 255];
const INK: Rgb = [17, 24, 39];

/**
 * The colours derived from any BRAND_COLOR so the pages keep WCAG 1.4.3 / 1.4.11 contrast: the label colour on a brand
 * button (white or ink, whichever reads better), and the brand darkened until it reads on white (links, focus rings).
 */
export function brandPalette(color: string): { brand: string; onBrand: string; text: string } {
  const rgb = rgbOf(color);
  const onBrand = contrast(rgb, WHITE) >= contrast(rgb, INK) ? WHITE : INK;
  let text = rgb;
  for (let step = 1; contrast(text, WHITE) < 4.5 && step <= 20; step++) text = rgb.map((channel) => channel * (1 - step / 20)) as Rgb;
  return { brand: hexOf(rgb), onBrand: hexOf(onBrand), text: hexOf(text) };
}

function withStyle(value: Brand) {
  if (!/^#(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{6})$/.test(value.color)) throw new Error('brand colour must be a hex colour');
  const palette = brandPalette(value.color);
  const css = `:root{--brand:${palette.brand};--brand-fg:${palette.onBrand};--brand-text:${palette.text}}`;
  return { ...value, css: new SafeHtml(css), cssHash: styleHash(css), logoOrigin: value.logoUrl ? new URL(value.logoUrl).origin : undefined };
}

let brand: Brand & { css: SafeHtml; cssHash: string; logoOrigin: string | undefined } = withStyle({ name: 'Fieldgate', logoUrl: undefined, color: '#1d4ed8' });

export function configureBrand(value: Brand): void {
  brand = withStyle(value);
}

export interface SendPageOptions {
  status?: number;
  /** Origins a form on the page may be redirected to (see setPageSecurityHeaders). */
  formActionOrigins?: readonly string[];
  /** Allow the page's static scripts (`<script src="/assets/…">`) from this origin. */
  selfScripts?: boolean;
  /** Origins of the page's iframes (front-channel logout). */
  frameOrigins?: readonly string[];
  /** A page of an authorization or logout flow, which a relying party may open in a popup (see setPageSecurityHeaders). */
  keepsOpener?: boolean;
}

export interface LayoutOptions {
  wide?: boolean;
  scripts?: readonly string[];
  /** Navigate here after this many seconds (`<meta http-equiv="refresh">`: needs no script, so no CSP exception). */
  refresh?: { seconds: number; url: string };
}

export function layout(title: string, body: SafeHtml, options: LayoutOptions = {}): SafeHtml {
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
${options.refresh ? html`<meta http-equiv="refresh" content="${String(options.refresh.seconds)};url=${options.refresh.url}">
` : ''}<title>${title} · ${brand.name}</title>
<style>${TRUSTED_STYLE}</style>
<style>${brand.css}</style>
</head>
<body>
<main${options.wide ? html` class="wide"` : ''}>
<p class="brand">${brand.logoUrl ? html`<img src="${brand.logoUrl}" alt="">` : ''}${brand.name}</p>
${body}
</main>
${(options.scripts ?? []).map((src) => html`<script src="${src}"></script>`)}
</body>
</html>
`;
}

export function sendPage(res: Response, page: SafeHtml, options: SendPageOptions = {}): void {
  setPageSecurityHeaders(res, {
    styleHashes: [STYLE_HASH, brand.cssHash],
    formActionOrigins: options.formActionOrigins ?? [],
    selfScripts: options.selfScripts ?? false,
    imageOrigins: brand.logoOrigin ? [brand.logoOrigin] : [],
    frameOrigins: options.frameOrigins ?? [],
    keepsOpener: options.keepsOpener ?? false,
  });
  res.status(options.status ?? 200).type('html').send(page.value);
}

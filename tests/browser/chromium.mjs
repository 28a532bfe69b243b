// How the browser tests and the browser bench start Debian's Chromium: headless, offline, a fresh profile
// (playwright's default), WebGPU on SwiftShader only when asked.
export const CHROMIUM = process.env.LEAKSCOPE_CHROMIUM ?? '/usr/lib/chromium/chromium';

export function chromiumArgs({ webgpu }) {
  return [
    ...(webgpu ? ['--enable-unsafe-webgpu'] : []),
    '--no-sandbox',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
    '--no-first-run',
    '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost',
  ];
}

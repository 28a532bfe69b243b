// The live loss curve: mean reconstruction loss of the ensemble against the step, log scale.
export class LossChart {
  #canvas;
  #points = [];
  #steps = 1;

  constructor(canvas) {
    this.#canvas = canvas;
  }

  reset(steps) {
    this.#points = [];
    this.#steps = Math.max(1, steps);
    this.draw();
  }

  add(step, loss) {
    if (loss === null || !Number.isFinite(loss) || loss <= 0) return;
    this.#points.push([step, loss]);
    this.draw();
  }

  draw() {
    const c = this.#canvas;
    const ratio = window.devicePixelRatio || 1;
    const width = c.clientWidth || c.width;
    const height = c.clientHeight || c.height;
    if (c.width !== Math.round(width * ratio)) {
      c.width = Math.round(width * ratio);
      c.height = Math.round(height * ratio);
    }
    const g = c.getContext('2d');
    g.setTransform(ratio, 0, 0, ratio, 0, 0);
    g.clearRect(0, 0, width, height);
    const style = getComputedStyle(c);
    const ink = style.getPropertyValue('--ink').trim() || '#222';
    const line = style.getPropertyValue('--accent').trim() || '#c0392b';
    const left = 48;
    const bottom = height - 22;
    g.font = '11px system-ui, sans-serif';
    g.fillStyle = ink;
    g.strokeStyle = ink;
    g.globalAlpha = 0.5;
    g.beginPath();
    g.moveTo(left, 6);
    g.lineTo(left, bottom);
    g.lineTo(width - 8, bottom);
    g.stroke();
    g.globalAlpha = 1;
    g.fillText('step', (left + width) / 2 - 12, bottom + 14);
    g.fillText(String(this.#steps), width - 8 - g.measureText(String(this.#steps)).width, bottom + 14);
    g.fillText('0', left, bottom + 14);
    if (this.#points.length === 0) {
      g.fillText('loss (log scale) appears here as the attack runs', left + 12, bottom / 2);
      return;
    }
    const logs = this.#points.map(([, l]) => Math.log10(l));
    let lo = Math.floor(Math.min(...logs));
    let hi = Math.ceil(Math.max(...logs));
    if (hi === lo) hi = lo + 1;
    for (let e = lo; e <= hi; e++) {
      const y = bottom - ((e - lo) / (hi - lo)) * (bottom - 6);
      g.globalAlpha = 0.15;
      g.beginPath();
      g.moveTo(left, y);
      g.lineTo(width - 8, y);
      g.stroke();
      g.globalAlpha = 1;
      g.fillText(`1e${e}`, 4, y + 4);
    }
    g.strokeStyle = line;
    g.lineWidth = 2;
    g.beginPath();
    this.#points.forEach(([step, loss], i) => {
      const x = left + (step / this.#steps) * (width - 8 - left);
      const y = bottom - ((Math.log10(loss) - lo) / (hi - lo)) * (bottom - 6);
      if (i === 0) g.moveTo(x, y);
      else g.lineTo(x, y);
    });
    g.stroke();
    g.lineWidth = 1;
  }
}

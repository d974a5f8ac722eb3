const pick = (e) => {
  const tok = e.target.closest('[data-pos]');
  if (tok) trigger('click', {pos: Number(tok.dataset.pos)});
};
element.addEventListener('click', pick);
element.addEventListener('keydown', (e) => { if (e.key === 'Enter') pick(e); });

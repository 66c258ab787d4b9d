def softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


d_k = Q.shape[-1]
scores = Q @ K.T
scaled = scores                      # Yanlış: ölçekleme yok
weights = softmax(scaled, axis=-1)

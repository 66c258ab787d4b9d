def softmax(z, axis=-1):
    e = np.exp(z)                    # Yanlış: büyük skorlarda taşar
    return e / e.sum(axis=axis, keepdims=True)


d_k = Q.shape[-1]
scores = Q @ K.T
scaled = scores / np.sqrt(d_k)
weights = softmax(scaled, axis=-1)

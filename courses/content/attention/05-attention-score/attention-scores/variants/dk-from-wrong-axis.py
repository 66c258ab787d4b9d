def softmax(z, axis=-1):
    z = z - z.max(axis=axis, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=axis, keepdims=True)


d_k = K.shape[0]                     # Yanlış: bu n_k
scores = Q @ K.T
scaled = scores / np.sqrt(d_k)
weights = softmax(scaled, axis=-1)

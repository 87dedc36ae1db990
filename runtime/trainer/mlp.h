/* SPDX-License-Identifier: MIT */
/* mlp.h — a multilayer perceptron (Linear + ReLU, softmax cross-entropy) in float32 on the CPU.
 * The shape and parameter layout live here; the math of one layer at a time is exposed so the
 * data-parallel step can gather, use and free each layer's parameters (ZeRO-3) around it. */
#ifndef TT_MLP_H
#define TT_MLP_H

#include <stddef.h>
#include <stdint.h>

#include "tt_err.h"

#define TT_MLP_MAX_LAYERS 64

/* Layer l maps dims[l] inputs to dims[l+1] outputs. Its parameters are one contiguous block of
 * the flat parameter vector at param_off[l]: W (dims[l+1] x dims[l], row-major) then b. */
typedef struct tt_mlp {
	int n_layers;
	int dims[TT_MLP_MAX_LAYERS + 1];
	size_t param_off[TT_MLP_MAX_LAYERS + 1]; /* param_off[n_layers] == n_params */
	size_t n_params;
} tt_mlp;

/* Parses a --layers spec: comma-separated widths, where a token "DxN" stands for N+1 copies of
 * D (N layers D->D). "784,256,10" is 784->256->10; "1000x10" is ten Linear(1000,1000), so the
 * input is 1000 features and the output 1000 classes; "784,1000x2,10" is 784->1000->1000->1000->10. */
int tt_mlp_parse(tt_mlp *m, const char *spec, tt_err *err);

static inline size_t tt_mlp_layer_params(const tt_mlp *m, int l)
{
	return m->param_off[l + 1] - m->param_off[l];
}

/* Widest layer output, for sizing activation buffers. */
int tt_mlp_max_width(const tt_mlp *m);

/* Floating-point operations of one training sample's GEMMs (multiply and add counted apart):
 * forward x W^T, weight gradient dy^T x, and input gradient dy W for every layer but the first,
 * which needs none. Bias, activation and optimizer work is not counted, as MFU convention has it. */
double tt_mlp_train_flops(const tt_mlp *m);

/* Weights and biases uniform in +-1/sqrt(fan_in) from a seed, the bounds of PyTorch's nn.Linear
 * default init; deterministic for a given (seed, layer). Fills the whole layer block. */
void tt_mlp_init_layer(const tt_mlp *m, int l, uint64_t seed, float *params_l);

/* One linear layer of any shape, params = W (out x in, row-major) then b (out), as every layer of
 * the model or a tensor-parallel part of one (parallel.h) lays them out.
 * Forward: y[n x out] = x[n x in] W^T + b (no b when !with_bias: a row-parallel layer adds it after
 * the all-reduce, with tt_bias_relu), then ReLU when relu. */
void tt_linear_forward(int in, int out, const float *params, int with_bias, int relu, const float *x, float *y,
		       int n);
void tt_bias_relu(float *y, const float *b, int out, int relu, int n);
/* Backward: dy[n x out] (gradient w.r.t. the post-ReLU y) is masked in place when relu;
 * grad = beta*grad + dL/dparams; dx (when not NULL) = dL/dx[n x in]. */
void tt_linear_backward(int in, int out, const float *params, int relu, const float *x, const float *y, float *dy,
			float *grad, float beta, float *dx, int n);

/* y[n x out] = x[n x in] W^T + b, then ReLU unless l is the last layer. */
void tt_mlp_forward_layer(const tt_mlp *m, int l, const float *params_l, const float *x, float *y, int n);

/* Backward of layer l. dy[n x out] is the gradient w.r.t. the layer's output y (post-ReLU);
 * it is masked in place by the ReLU. grad_l = beta*grad_l + dL/dparams. When dx is not NULL it
 * receives dL/dx[n x in]. */
void tt_mlp_backward_layer(const tt_mlp *m, int l, const float *params_l, const float *x, const float *y,
			   float *dy, float *grad_l, float beta, float *dx, int n);

/* Softmax cross-entropy of logits[n x classes] against labels. Writes dlogits = scale * (softmax -
 * onehot) (scale is 1/global batch so that summing over ranks gives the mean's gradient), adds the
 * summed loss to *loss_sum and the number of argmax hits to *correct. Returns -1 for a label out of
 * range. */
int tt_softmax_xent(const float *logits, const int32_t *labels, int n, int classes, float scale, float *dlogits,
		    double *loss_sum, long *correct, tt_err *err);

#endif

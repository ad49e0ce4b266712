@PIPELINES.register_module()
class LoadSegLogit(object):

    def __init__(self,
                 seg_path):
        self.seg_path = seg_path

    def __call__(self, results):
        seg_data = []
        for cls in ['vessel', 'od', 'oc', 'ex', 'he', 'se', 'ma']:
            seg_cls = np.load(
                os.path.join(self.seg_path, cls, results['ori_filename'].replace('.jpg', '.npy'))).astype(
                np.float32)
            seg_data.append(seg_cls)
        seg_data = np.stack(seg_data, axis=-1)
        results['seg_logit'] = seg_data
        return results

    def __repr__(self):
        repr_str = (f'{self.__class__.__name__}('
                    f'seg_path={self.seg_path})')
        return repr_str
